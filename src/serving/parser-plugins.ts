// --tool-parser-plugin / --reasoning-parser-plugin: a file that adds parsers to the registries
// at start-up. It is a CommonJS or ES module (.js, .cjs, .mjs) or TypeScript (.ts, transpiled
// with the `typescript` package when it is installed), and exports either or both of:
//
//   export const toolParsers = { my_format: MyToolParser };          // name -> class
//   export const reasoningParsers = { my_thinking: MyReasoningParser };
//   export function register(ortllm) { ortllm.toolParsers.register('my_format', ...); }
//
// `register` gets the registries and the base classes (see PluginApi) so a plugin can extend
// ScanningToolParser or ThinkTagReasoningParser. A tool parser class is constructed with
// `{ tools }` per choice and implements `extract(text)` and `extractDelta(delta, finished)`
// (src/serving/tool-parsers/types.ts); a reasoning parser is constructed with
// `{ chatTemplateKwargs }` and implements `isReasoningEnd`, `extract` and `extractDelta`
// (src/serving/reasoning/types.ts). docs/tool-calling.md has a complete example.

import { readFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REASONING_PARSERS, ThinkTagReasoningParser } from './reasoning';
import type { ParserRegistry } from './parser-registry';
import { makeToolCallId, ScanningToolParser, TOOL_PARSERS } from './tool-parsers';

/** What a plugin's `register` receives. */
export const PLUGIN_API = {
  toolParsers: TOOL_PARSERS,
  reasoningParsers: REASONING_PARSERS,
  ScanningToolParser,
  ThinkTagReasoningParser,
  makeToolCallId,
};
export type PluginApi = typeof PLUGIN_API;

const loaded = new Set<string>();

/**
 * A real dynamic import(): TypeScript's CommonJS output turns a written import() into require(),
 * which cannot load ES modules, so the call is built at run time.
 */
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- see above: the only way to keep import() in CommonJS output
const importModule = new Function('url', 'return import(url)') as (url: string) => Promise<Record<string, unknown>>;

function compileTypeScript(path: string): Record<string, unknown> {
  let ts: typeof import('typescript');
  try {
    ts = createRequire(__filename)('typescript') as typeof import('typescript');
  } catch {
    throw new Error(`${path}: a TypeScript plugin needs the 'typescript' package (install it, or compile the plugin to .js)`);
  }
  const { outputText } = ts.transpileModule(readFileSync(path, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    fileName: path,
  });
  // Compiled as a module of that path, so its own relative imports resolve beside it.
  const mod = new Module(path, module) as Module & { _compile(code: string, file: string): void };
  mod.filename = path;
  mod.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(path));
  mod._compile(outputText, path);
  return mod.exports as Record<string, unknown>;
}

async function loadModule(path: string): Promise<Record<string, unknown>> {
  const ext = extname(path);
  if (['.ts', '.cts', '.mts'].includes(ext)) return compileTypeScript(path);
  if (ext === '.mjs') return importModule(pathToFileURL(path).href);
  try {
    return createRequire(__filename)(path) as Record<string, unknown>;
  } catch (err) {
    // A .js file in an ES-module package.
    if ((err as { code?: string }).code === 'ERR_REQUIRE_ESM') return importModule(pathToFileURL(path).href);
    throw err;
  }
}

function registerAll<F>(registry: ParserRegistry<F>, table: unknown, path: string): void {
  if (table === undefined) return;
  if (!table || typeof table !== 'object') throw new Error(`${path}: ${registry.kind}s must be an object of name -> class`);
  for (const [name, factory] of Object.entries(table)) {
    if (typeof factory !== 'function') throw new Error(`${path}: ${registry.kind} '${name}' is not a class`);
    registry.register(name, factory as F);
  }
}

/** Loads a plugin file once; throws with the file's name when it cannot be loaded. */
export async function loadParserPlugin(file: string): Promise<void> {
  const path = resolve(file);
  if (loaded.has(path)) return;
  let namespace: Record<string, unknown>;
  try {
    namespace = await loadModule(path);
  } catch (err) {
    throw new Error(`cannot load parser plugin ${path}: ${(err as Error).message}`);
  }
  const plugin = (namespace.default && typeof namespace.default === 'object' ? namespace.default : namespace) as Record<string, unknown>;
  registerAll(TOOL_PARSERS, plugin.toolParsers, path);
  registerAll(REASONING_PARSERS, plugin.reasoningParsers, path);
  if (typeof plugin.register === 'function') await (plugin.register as (api: PluginApi) => unknown)(PLUGIN_API);
  loaded.add(path);
}

export interface ParserFlags {
  toolParserPlugin: string | null;
  reasoningParserPlugin: string | null;
  toolCallParser: string | null;
  reasoningParser: string | null;
}

/** Loads the plugin files, then checks that the parser names are registered (vLLM's messages). */
export async function setUpOutputParsers(flags: ParserFlags): Promise<void> {
  for (const file of [flags.toolParserPlugin, flags.reasoningParserPlugin]) if (file) await loadParserPlugin(file);
  if (flags.toolCallParser !== null && !TOOL_PARSERS.has(flags.toolCallParser)) {
    throw new Error(`invalid tool call parser: ${flags.toolCallParser} (chose from { ${TOOL_PARSERS.names().join(', ')} })`);
  }
  if (flags.reasoningParser !== null && !REASONING_PARSERS.has(flags.reasoningParser)) {
    throw new Error(`invalid reasoning parser: ${flags.reasoningParser} (chose from { ${REASONING_PARSERS.names().join(', ')} })`);
  }
}
