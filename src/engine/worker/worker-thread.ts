// Starts a worker_thread on one of the engine's entry files. From the compiled build the
// worker runs dist/.../<name>.js; from TypeScript sources (jest, ts-node) a small bootstrap
// compiles .ts files on require with @swc/core (or TypeScript's transpileModule), since the
// worker does not inherit the parent's loader.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker, type Transferable, type WorkerOptions } from 'node:worker_threads';

const TS_BOOTSTRAP = `
const fs = require('node:fs');
const { workerData } = require('node:worker_threads');
let compile;
try {
  const swc = require(require.resolve('@swc/core', { paths: [workerData.root] }));
  compile = (source, filename) => swc.transformSync(source, {
    filename, sourceMaps: 'inline',
    jsc: { parser: { syntax: 'typescript', decorators: true }, target: 'es2022',
           transform: { legacyDecorator: true, decoratorMetadata: true } },
    module: { type: 'commonjs' },
  }).code;
} catch {
  const ts = require(require.resolve('typescript', { paths: [workerData.root] }));
  compile = (source, filename) => ts.transpileModule(source, { fileName: filename, compilerOptions: {
    module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, experimentalDecorators: true,
    emitDecoratorMetadata: true, esModuleInterop: true, inlineSourceMap: true } }).outputText;
}
require.extensions['.ts'] = (module, filename) => module._compile(compile(fs.readFileSync(filename, 'utf8'), filename), filename);
require(workerData.entry);
`;

/**
 * `dir`: the caller's __dirname; `name`: the entry file without extension; `data`: its workerData
 * (structured-cloned); `transferList`: objects in `data` moved rather than cloned (MessagePorts);
 * `extra`: further Worker options (resourceLimits).
 */
export function startWorkerThread(dir: string, name: string, data: object, transferList: Transferable[] = [], extra: Pick<WorkerOptions, 'resourceLimits'> = {}): Worker {
  const compiled = path.join(dir, `${name}.js`);
  if (!__filename.endsWith('.ts') && fs.existsSync(compiled)) return new Worker(compiled, { ...extra, workerData: data, transferList });
  const root = path.resolve(__dirname, '../../..');
  return new Worker(TS_BOOTSTRAP, { ...extra, eval: true, workerData: { ...data, entry: path.join(dir, `${name}.ts`), root }, transferList });
}
