// Starts a worker_thread running one of this project's modules. From the compiled build the
// worker runs the .js file next to the caller; from TypeScript sources (jest, ts-node) a small
// bootstrap compiles .ts files on require with @swc/core (or TypeScript's transpileModule),
// since a worker does not inherit the parent's loader.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

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

const REPO_ROOT = path.resolve(__dirname, '../../..');

/**
 * Runs `<dir>/<name>.js` (compiled) or `<dir>/<name>.ts` (sources) in a new worker thread.
 * `workerData` reaches the module as worker_threads' workerData (plus `entry` and `root` from sources).
 */
export function startScriptWorker(dir: string, name: string, workerData: object): Worker {
  const compiled = path.join(dir, `${name}.js`);
  if (!__filename.endsWith('.ts') && fs.existsSync(compiled)) return new Worker(compiled, { workerData });
  const data = { ...workerData, entry: path.join(dir, `${name}.ts`), root: REPO_ROOT };
  return new Worker(TS_BOOTSTRAP, { eval: true, workerData: data });
}
