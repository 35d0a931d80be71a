// Starts the engine core in a worker_thread and returns the frontend's connection to it.

import type { Worker } from 'node:worker_threads';
import type { EngineOptions } from '../types';
import { startWorkerThread } from './worker-thread';
import { ControlCalls } from '../core/control-calls';
import type { CoreCommand, CoreConnection, CoreEvent, CoreInfo, WorkerData, WorkerStartupMessage } from '../core/protocol';
import { decodeStep, type WireStep } from '../core/step-wire';

/** Resolves once the worker has loaded the model and built the runner. */
export function spawnEngineWorker(options: EngineOptions, onEvent: (event: CoreEvent) => void): Promise<CoreConnection> {
  const data: WorkerData = { options };
  const worker: Worker = startWorkerThread(__dirname, 'engine-worker', data);

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
      pause: (requestIds) => post({ type: 'pause', requestIds }),
      resume: (requestIds) => post({ type: 'resume', requestIds }),
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

    worker.on('message', (message: CoreEvent | WireStep | WorkerStartupMessage) => {
      if (message.type === 'step-wire') {
        onEvent(decodeStep(message));
      } else if (message.type === 'ready') {
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
