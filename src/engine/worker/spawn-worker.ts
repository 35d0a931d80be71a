// Starts the engine core in a worker_thread and returns the frontend's connection to it.
// From the compiled build the worker runs dist/.../engine-worker.js; from TypeScript
// sources (jest, ts-node) a small bootstrap compiles .ts files on require with @swc/core
// (or TypeScript's transpileModule), since the worker does not inherit the parent's loader.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { EngineOptions } from '../types';
import { ControlCalls } from '../core/control-calls';
import type { CoreCommand, CoreConnection, CoreEvent, CoreInfo, WorkerData, WorkerStartupMessage } from '../core/protocol';

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

/** Resolves once the worker has loaded the model and built the runner. */
export function spawnEngineWorker(options: EngineOptions, onEvent: (event: CoreEvent) => void): Promise<CoreConnection> {
  const data: WorkerData & { entry?: string; root?: string } = { options };
  let worker: Worker;
  const compiled = path.join(__dirname, 'engine-worker.js');
  if (!__filename.endsWith('.ts') && fs.existsSync(compiled)) {
    worker = new Worker(compiled, { workerData: data });
  } else {
    data.entry = path.join(__dirname, 'engine-worker.ts');
    data.root = path.resolve(__dirname, '../../..');
    worker = new Worker(TS_BOOTSTRAP, { eval: true, workerData: data });
  }

  return new Promise<CoreConnection>((resolve, reject) => {
    let info: CoreInfo | null = null;
    let exited = false;
    let exitWaiters: Array<() => void> = [];
    const calls = new ControlCalls();
    const connection: CoreConnection = {
      get info() {
        return info!;
      },
      add: (request) => post({ type: 'add', request }),
      encode: (request) => post({ type: 'encode', request }),
      abort: (requestIds) => post({ type: 'abort', requestIds }),
      control: (op) => (exited ? Promise.reject(new Error('engine worker has exited')) : calls.call(op, (callId, o) => post({ type: 'control', callId, op: o }))),
      shutdown: async () => {
        if (exited) return;
        const done = new Promise<void>((r) => exitWaiters.push(r));
        post({ type: 'shutdown' });
        const timer = setTimeout(() => void worker.terminate(), 10_000);
        await done;
        clearTimeout(timer);
      },
    };
    const post = (command: CoreCommand) => {
      if (!exited) worker.postMessage(command);
    };

    worker.on('message', (message: CoreEvent | WorkerStartupMessage) => {
      if (message.type === 'ready') {
        info = message.info;
        resolve(connection);
      } else if (message.type === 'startup-error') {
        reject(new Error(`engine worker failed to start: ${message.error}`));
        void worker.terminate();
      } else if (!calls.settle(message)) {
        onEvent(message);
      }
    });
    worker.on('error', (err) => {
      if (info === null) reject(err);
      else onEvent({ type: 'dead', error: `engine worker crashed: ${err.stack ?? err.message}` });
    });
    worker.on('exit', (code) => {
      exited = true;
      calls.failAll(`engine worker exited (code ${code})`);
      for (const w of exitWaiters) w();
      exitWaiters = [];
      if (info === null) reject(new Error(`engine worker exited during start-up (code ${code})`));
      else onEvent({ type: 'dead', error: `engine worker exited (code ${code})` });
    });
  });
}
