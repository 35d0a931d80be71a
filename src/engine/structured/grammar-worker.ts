// Entry of the grammar worker thread: owns xgrammar (the compiler, its LRU cache and one
// matcher per constrained sequence), so compiling a schema and filling bitmasks never run on
// the engine core's thread. See grammar-protocol.ts for the exchange.

import { parentPort, workerData } from 'node:worker_threads';
import { RequestValidationError } from '../errors';
import { StructuredOutputCompiler } from './grammar-compiler';
import type { GrammarConstraint } from './grammar-constraint';
import { SLOT_READY, SLOT_REJECTED, slotWords, type GrammarCommand, type GrammarReply, type GrammarWorkerData } from './grammar-protocol';

async function main(): Promise<void> {
  const port = parentPort!;
  const data = workerData as GrammarWorkerData;
  const send = (reply: GrammarReply) => port.postMessage(reply);
  let compiler: StructuredOutputCompiler;
  try {
    compiler = await StructuredOutputCompiler.fromVocab(data.vocab, data.stopTokenIds, data.cacheSize);
  } catch (err) {
    send({ type: 'startup-error', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    return;
  }
  const control = new Int32Array(data.control);
  const words = slotWords(data.vocab.length);
  const constraints = new Map<number, GrammarConstraint>();
  let nextId = 1;
  let slots: Int32Array<ArrayBufferLike> = new Int32Array(0);

  const compile = async (cmd: Extract<GrammarCommand, { type: 'compile' }>) => {
    try {
      compiler.drainStats();
      const compiled = compiler.compile(cmd.spec);
      const seconds = compiler.drainStats().compileSeconds[0] ?? null;
      const ids: number[] = [];
      for (let i = 0; i < cmd.count; i++) {
        const id = nextId++;
        constraints.set(id, await compiler.createConstraint(compiled, cmd.enabled));
        ids.push(id);
      }
      send({ type: 'compiled', requestId: cmd.requestId, ids, seconds });
    } catch (err) {
      const e = err as Error;
      send({ type: 'compile-failed', requestId: cmd.requestId, message: e.message, param: err instanceof RequestValidationError ? err.param : null, name: e.name });
    }
  };

  const dispose = (ids: readonly number[]) => {
    for (const id of ids) {
      constraints.get(id)?.dispose();
      constraints.delete(id);
    }
  };

  const step = async (cmd: Extract<GrammarCommand, { type: 'step' }>) => {
    if (cmd.dispose) dispose(cmd.dispose);
    if (cmd.slots) slots = new Int32Array(cmd.slots);
    for (const job of cmd.jobs) {
      const constraint = constraints.get(job.id);
      const at = job.slot * words;
      try {
        if (!constraint) throw new Error(`unknown grammar constraint ${job.id}`);
        if (job.enable) constraint.enable();
        for (const token of job.accept) constraint.accept(token);
        await constraint.prepare();
        constraint.writeMask(slots, at + 1);
        slots[at] = SLOT_READY;
      } catch {
        slots[at] = SLOT_REJECTED;
      }
    }
    Atomics.store(control, 0, cmd.step);
    Atomics.notify(control, 0);
  };

  // One command at a time, in order (a compile's matchers are created asynchronously).
  let queue = Promise.resolve();
  port.on('message', (cmd: GrammarCommand) => {
    queue = queue.then(async () => {
      switch (cmd.type) {
        case 'compile':
          return compile(cmd);
        case 'step':
          return step(cmd);
        case 'dispose':
          return dispose(cmd.ids);
      }
    });
  });
  send({ type: 'ready' });
}

void main();
