// Loads @mlc-ai/web-xgrammar (the WASM build of xgrammar, vLLM's default structured-output
// backend) in Node, once per thread.
//
// Why not a plain import: the package says "type": "module" but its lib/index.js is an
// Emscripten bundle written for CommonJS (`exports`, `require`, `__filename`), so both
// `import` and `require` fail. We compile the file as CommonJS ourselves.
//
// Why the source is patched: xgrammar reports a bad grammar / schema / regex by printing
// "[FATAL] <file>:<line>: <reason>" through Emscripten's `err()` and then aborting, and the JS
// error it throws says only "Aborted()". One statement of the bundle binds `err` to
// console.error; we point it at a sink that keeps the last message, so errors can say why.
// The instance stays usable after such an abort (later calls work; the aborted call leaks
// the little memory it had allocated).

import Module from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as XgrammarModule from '@mlc-ai/web-xgrammar';

export type XgrammarLib = typeof XgrammarModule;
export type { CompiledGrammar, GrammarCompiler, GrammarMatcher, TokenizerInfo } from '@mlc-ai/web-xgrammar';

const ERR_BINDING = 'var err=Module["printErr"]||console.error.bind(console);';
/** Name of the sink on the CommonJS `module` object the bundle is compiled with (not globalThis: jest's vm differs). */
const SINK = '__ortllmXgrammarErr';

/** Messages xgrammar printed during the current guarded call. */
let printed: string[] = [];

interface NodeModuleInternals {
  _compile(source: string, filename: string): void;
  exports: unknown;
  filename: string;
  paths: string[];
}

function loadBundle(): XgrammarLib {
  const file = require.resolve('@mlc-ai/web-xgrammar');
  const source = readFileSync(file, 'utf8');
  if (!source.includes(ERR_BINDING)) {
    throw new Error(`@mlc-ai/web-xgrammar: unexpected bundle layout (no "${ERR_BINDING}"); pin the version this code was written for (0.1.27).`);
  }
  const patched = `var ${SINK}=module.${SINK};` + source.replace(ERR_BINDING, `var err=Module["printErr"]||${SINK};`);
  const ModuleCtor = Module as unknown as new (id: string) => NodeModuleInternals;
  const m = new ModuleCtor(file);
  (m as unknown as Record<string, unknown>)[SINK] = (...args: unknown[]) => {
    const line = args.map(String).join(' ');
    // A refusal's reason is kept for guarded(); anything else xgrammar says is passed on.
    if (line.includes('[FATAL]') || line.startsWith('Aborted(')) printed.push(line);
    else console.warn(`[xgrammar] ${line}`);
  };
  m.filename = file;
  m.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(file));
  m._compile(patched, file);
  return m.exports as XgrammarLib;
}

/** An embind object of the WASM side (free it with delete()). */
export interface BindingHandle {
  delete(): void;
}

/**
 * The embind class behind Grammar: its factories are synchronous, unlike the wrapper's
 * async ones (which only await the one-time WASM start). Synchronous calls let guarded()
 * pair each failure with its printed reason.
 */
export interface GrammarBinding {
  FromEBNF(ebnf: string, rootRule: string): BindingHandle;
  FromJSONSchema(
    schema: string,
    anyWhitespace: boolean,
    indent: number | undefined,
    separators: { first: string; second: string } | undefined,
    strictMode: boolean,
    maxWhitespaceCount: number | undefined,
    printConverted: boolean,
  ): BindingHandle;
  FromStructuralTag(structuralTagJson: string): BindingHandle;
}

export interface Xgrammar {
  lib: XgrammarLib;
  grammar: GrammarBinding;
}

let loaded: Xgrammar | null = null;
let ready: Promise<Xgrammar> | null = null;

/** The library with its WASM instance started (the first call in a thread takes ~20 ms). */
export function loadXgrammar(): Promise<Xgrammar> {
  ready ??= (async () => {
    const lib = loadBundle();
    const json = await lib.Grammar.builtinJSONGrammar();
    const grammar = (json.handle as { constructor: GrammarBinding }).constructor;
    json.dispose();
    loaded = { lib, grammar };
    return loaded;
  })();
  return ready;
}

/** xgrammar when loadXgrammar() has finished in this thread, else null. */
export function loadedXgrammar(): Xgrammar | null {
  return loaded;
}

/** An error xgrammar raised, with the reason it printed (e.g. 'Unsupported type "objectx"'). */
export class XgrammarError extends Error {}

/**
 * Runs a synchronous xgrammar call; an abort becomes an XgrammarError carrying xgrammar's own
 * reason. Calls that can fail are made synchronously (through the binding handles, see
 * grammar-builder.ts), so no other call can print in between.
 */
export function guarded<T>(call: () => T): T {
  printed = [];
  try {
    return call();
  } catch (err) {
    throw new XgrammarError(xgrammarReason(err));
  } finally {
    printed = [];
  }
}

function xgrammarReason(err: unknown): string {
  const fatal = printed.find((line) => line.includes('[FATAL]'));
  if (fatal) {
    // "[FATAL] /path/grammar_parser.cc:552: EBNF parser error at line 1, …" → the reason only.
    return fatal.replace(/^\[FATAL\]\s*\S+:\d+:\s*/, '').trim();
  }
  return err instanceof Error ? err.message : String(err);
}
