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
// A refusal (a [FATAL] reason) leaves the instance usable; a trap (out-of-bounds access, a
// failed allocation) may not, so callers discard the instance after one. A second patch lets
// a thread cap the instance's heap (Emscripten's getHeapMax), a compile's memory budget.

import Module from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as XgrammarModule from '@mlc-ai/web-xgrammar';

export type XgrammarLib = typeof XgrammarModule;
export type { CompiledGrammar, GrammarCompiler, GrammarMatcher, TokenizerInfo } from '@mlc-ai/web-xgrammar';

const ERR_BINDING = 'var err=Module["printErr"]||console.error.bind(console);';
/** Emscripten's cap on the WASM heap; the patched bundle reads ours (a compile worker's memory budget). */
const HEAP_MAX = 'getHeapMax=()=>2147483648;';
/** Name of the sink on the CommonJS `module` object the bundle is compiled with (not globalThis: jest's vm differs). */
const SINK = '__ortllmXgrammarErr';
const HEAP_MAX_KEY = '__ortllmXgrammarHeapMax';

/** Messages xgrammar printed during the current guarded call. */
let printed: string[] = [];

interface NodeModuleInternals {
  _compile(source: string, filename: string): void;
  exports: unknown;
  filename: string;
  paths: string[];
}

function loadBundle(heapMaxBytes: number): XgrammarLib {
  const file = require.resolve('@mlc-ai/web-xgrammar');
  const source = readFileSync(file, 'utf8');
  for (const statement of [ERR_BINDING, HEAP_MAX]) {
    if (!source.includes(statement)) {
      throw new Error(`@mlc-ai/web-xgrammar: unexpected bundle layout (no "${statement}"); pin the version this code was written for (0.1.27).`);
    }
  }
  const patched =
    `var ${SINK}=module.${SINK};` +
    source.replace(ERR_BINDING, `var err=Module["printErr"]||${SINK};`).replace(HEAP_MAX, `getHeapMax=()=>module.${HEAP_MAX_KEY};`);
  const ModuleCtor = Module as unknown as new (id: string) => NodeModuleInternals;
  const m = new ModuleCtor(file);
  (m as unknown as Record<string, unknown>)[HEAP_MAX_KEY] = Math.min(heapMaxBytes, DEFAULT_HEAP_MAX);
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

/** The bundle's own cap: WASM32 with its 2 GiB build setting. */
const DEFAULT_HEAP_MAX = 2 ** 31;

let ready: Promise<Xgrammar> | null = null;

/**
 * The library with its WASM instance started (the first call in a thread takes ~20 ms).
 * `heapMaxBytes` (first call only): the most memory the instance may grow to; beyond it an
 * allocation fails and the call traps.
 */
export function loadXgrammar(heapMaxBytes = DEFAULT_HEAP_MAX): Promise<Xgrammar> {
  ready ??= (async () => {
    const lib = loadBundle(heapMaxBytes);
    const json = await lib.Grammar.builtinJSONGrammar();
    const grammar = (json.handle as { constructor: GrammarBinding }).constructor;
    json.dispose();
    return { lib, grammar };
  })();
  return ready;
}

/**
 * An error xgrammar raised. A refusal carries the reason it printed (e.g. 'Unsupported type
 * "objectx"'); a trap (out-of-bounds access, failed allocation, a failed internal check) may
 * have left the instance corrupt: `trapped`, and the message is the raw one, for the log only.
 */
export class XgrammarError extends Error {
  constructor(
    message: string,
    readonly trapped: boolean,
  ) {
    super(message);
  }
}

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
    const fatal = printed.find((line) => line.includes('[FATAL]'));
    // "[FATAL] /path/grammar_parser.cc:552: EBNF parser error at line 1, …" → the reason only.
    const reason = fatal?.replace(/^\[FATAL\]\s*\S+:\d+:\s*/, '').trim();
    const readable = reason && !reason.startsWith('Check failed') ? reason : null;
    // A C++ exception reaches JS as the number of its pointer: unwound cleanly, the instance is sound.
    if (typeof err === 'number') throw new XgrammarError(readable ?? 'the grammar engine refused it', false);
    if (readable) throw new XgrammarError(readable, false);
    // WASM traps (out-of-bounds access, abort, a bad indirect call) are RuntimeErrors; other errors are ours (grammar rewrites).
    if (err instanceof Error && err.name !== 'RuntimeError' && !fatal) throw new XgrammarError(err.message, false);
    throw new XgrammarError(fatal ?? (err instanceof Error ? err.message : String(err)), true);
  } finally {
    printed = [];
  }
}
