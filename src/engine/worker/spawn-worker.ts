// Starts the engine core in a worker_thread and returns the frontend's connection to it.
//
// The core's events come on a MessageChannel of their own rather than the worker's built-in
// port, so the HTTP thread can take every step message already waiting (receiveMessageOnPort)
// when it handles one. Node runs the microtasks after each message it delivers, so each step
// otherwise becomes its own write on every stream's socket; taken together, the outputs of the
// steps that queued up while the HTTP thread was busy reach each stream in one turn and leave in
// one writev (node's http corks the socket until the next tick). Fewer syscalls per token for
// the thread that falls behind, and nothing held back when it keeps up: bounded by what the
// worker already sent, so a paused stream's memory is as before.
// Commands go one postMessage each: holding a turn's adds for one message made a wave's first
// requests wait for the whole turn. Figures for both: docs/perf/engine-overhead.md.

import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads';
import type { EngineOptions } from '../types';
import { startWorkerThread } from './worker-thread';
import { PendingCalls, remoteCommands } from '../core/command-wire';
import type { CoreCommand, CoreConnection, CoreEvent, CoreInfo, WorkerData, WorkerStartupMessage } from '../core/protocol';
import { decodeStep, isWireStep, type WireStep } from '../core/step-wire';

/**
 * Step messages handled in one turn of the HTTP thread at most, so a long backlog still lets
 * new requests and timers in between.
 */
const MAX_EVENTS_PER_TURN = 8;

/**
 * Calls `handle` with each message of `port`, and with those already waiting behind it in the
 * same turn (up to MAX_EVENTS_PER_TURN), so their writes go out together (see the top).
 */
export function takeEvents<T>(port: MessagePort, handle: (message: T) => void): void {
  port.on('message', (message: T) => {
    handle(message);
    for (let taken = 1; taken < MAX_EVENTS_PER_TURN; taken++) {
      const next = receiveMessageOnPort(port);
      if (next === undefined) break;
      handle(next.message as T);
    }
  });
}

/** Resolves once the worker has loaded the model and built the runner. */
export function spawnEngineWorker(options: EngineOptions, onEvent: (event: CoreEvent) => void): Promise<CoreConnection> {
  const events = new MessageChannel();
  const data: WorkerData = { options, events: events.port2 };
  const worker: Worker = startWorkerThread(__dirname, 'engine-worker', data, [events.port2]);

  return new Promise<CoreConnection>((resolve, reject) => {
    let info: CoreInfo | null = null;
    let exited = false;
    let exitWaiters: Array<() => void> = [];
    const calls = new PendingCalls();
    const post = (command: CoreCommand) => {
      if (!exited) worker.postMessage(command);
    };
    const commands = remoteCommands(post, calls);
    const connection: CoreConnection = {
      ...commands,
      get info() {
        return info!;
      },
      // Done when the thread has exited: its 'command-done' may be lost with it.
      shutdown: async () => {
        if (exited) return;
        const done = new Promise<void>((r) => exitWaiters.push(r));
        commands.shutdown().catch(() => undefined);
        const timer = setTimeout(() => void worker.terminate(), 10_000);
        await done;
        clearTimeout(timer);
      },
    };

    const handle = (message: CoreEvent | WireStep): void => {
      if (isWireStep(message)) onEvent(decodeStep(message));
      else if (!calls.settle(message)) onEvent(message);
    };
    takeEvents(events.port1, handle);
    worker.on('message', (message: WorkerStartupMessage) => {
      if (message.type === 'ready') {
        info = message.info;
        resolve(connection);
      } else if (message.type === 'startup-error') {
        reject(new Error(`engine worker failed to start: ${message.error}`));
        void worker.terminate();
      }
    });
    worker.on('error', (err) => {
      if (info === null) reject(err);
      else onEvent({ type: 'dead', error: `engine worker crashed: ${err.stack ?? err.message}` });
    });
    worker.on('exit', (code) => {
      exited = true;
      // What the worker posted before it stopped is delivered first, as on its built-in port.
      for (let next = receiveMessageOnPort(events.port1); next !== undefined; next = receiveMessageOnPort(events.port1)) {
        handle(next.message as CoreEvent | WireStep);
      }
      events.port1.close();
      calls.close(`engine worker exited (code ${code})`);
      for (const w of exitWaiters) w();
      exitWaiters = [];
      if (info === null) reject(new Error(`engine worker exited during start-up (code ${code})`));
      else onEvent({ type: 'dead', error: `engine worker exited (code ${code})` });
    });
  });
}
