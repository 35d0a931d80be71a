// Entry point of the engine worker thread: loads the weights, builds the runner and runs
// the core's step loop, talking to the HTTP thread through small messages.

import { parentPort, workerData } from 'node:worker_threads';
import { loadModel } from '../../model/load-model';
import { EngineCoreHost } from '../core/core-host';
import { runCommand } from '../core/command-wire';
import type { CoreCommand, CoreEvent, WorkerData, WorkerStartupMessage } from '../core/protocol';
import { encodeStep } from '../core/step-wire';
import { releaseLoadCopies, tuneMalloc } from './malloc-tuning';

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('engine-worker must run in a worker thread');
  const { options, events } = workerData as WorkerData;
  let host: EngineCoreHost;
  try {
    tuneMalloc();
    const model = await loadModel({ ...options.load, loadWeights: true });
    // Loaded here from options.load and used for nothing else: the host owns it (see start).
    host = await EngineCoreHost.start(model, options, (event: CoreEvent) => events.postMessage(event.type === 'step' ? encodeStep(event) : event), true);
    releaseLoadCopies();
  } catch (err) {
    const message: WorkerStartupMessage = { type: 'startup-error', error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
    port.postMessage(message);
    return;
  }
  const reply = (event: CoreEvent) => events.postMessage(event);
  port.on('message', (command: CoreCommand) => {
    const settled = runCommand(host, command, reply);
    // Closing the port lets the thread exit, which the frontend's shutdown waits for.
    if (command.type === 'shutdown') void settled?.finally(() => port.close());
  });
  const ready: WorkerStartupMessage = { type: 'ready', info: host.info };
  port.postMessage(ready);
}

void main();
