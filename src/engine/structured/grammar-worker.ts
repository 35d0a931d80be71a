// Entry of the grammar worker thread: owns xgrammar (the compiler, its LRU cache and one
// matcher per constrained sequence), so compiling a schema and filling bitmasks never run on
// the engine core's thread. It only compiles specs that already compiled in a trial worker
// (grammar-trial-pool.ts). See grammar-protocol.ts for the exchange.

import { parentPort, workerData } from 'node:worker_threads';
import { RequestValidationError } from '../errors';
import { GrammarTrapError, uncompilableError } from './grammar-builder';
import { StructuredOutputCompiler } from './grammar-compiler';
import type { GrammarConstraint } from './grammar-constraint';
import { SLOT_ENDED, SLOT_READY, SLOT_REJECTED, SLOT_UNREACHABLE, slotWords, type GrammarCommand, type GrammarReply, type GrammarWorkerData } from './grammar-protocol';

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
      let e = err as Error;
      if (err instanceof GrammarTrapError) {
        // Its trial compiled (grammar-trial-pool.ts), so this is rare (this instance's heap is shared by every cached grammar).
        console.warn(`[structured-outputs] xgrammar trapped in the matcher worker on a ${cmd.spec.kind} constraint: ${err.message}`);
        e = uncompilableError(cmd.spec, 'the grammar engine failed on it');
      }
      send({ type: 'compile-failed', requestId: cmd.requestId, message: e.message, param: e instanceof RequestValidationError ? e.param : null, name: e.name });
      // The instance may be corrupt: GrammarClient starts a fresh worker.
      if (err instanceof GrammarTrapError) setImmediate(() => process.exit(1));
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
      const positions = 1 + job.drafts.length;
      try {
        if (!constraint) throw new Error(`unknown grammar constraint ${job.id}`);
        if (job.enable) constraint.enable();
        for (const token of job.accept) constraint.accept(token);
        await constraint.prepare(job.drafts);
        const masks = constraint.preparedMasks;
        if (masks === 0) throw new Error(`grammar constraint ${job.id} has ended`);
        for (let j = 0; j < positions; j++) {
          const at = (job.slot + j) * words;
          if (j < masks) constraint.writeMask(slots, at + 1, j);
          slots[at] = j < masks ? SLOT_READY : j <= constraint.draftsTaken ? SLOT_ENDED : SLOT_UNREACHABLE;
        }
      } catch {
        for (let j = 0; j < positions; j++) slots[(job.slot + j) * words] = SLOT_REJECTED;
      }
    }
    Atomics.store(control, 0, cmd.step);
    Atomics.notify(control, 0);
  };

  // Steps (and disposals) run in order as they come; compiles wait in their own queue and run
  // one at a time between them, so a burst of new specs delays a step by one compile at most.
  let steps = Promise.resolve();
  const compiles: Array<Extract<GrammarCommand, { type: 'compile' }>> = [];
  let compiling = false;
  const nextCompile = () => {
    if (compiling || compiles.length === 0) return;
    compiling = true;
    setImmediate(() => {
      void compile(compiles.shift()!).finally(() => {
        compiling = false;
        nextCompile();
      });
    });
  };
  port.on('message', (cmd: GrammarCommand) => {
    if (cmd.type === 'compile') {
      compiles.push(cmd);
      nextCompile();
      return;
    }
    steps = steps.then(() => (cmd.type === 'step' ? step(cmd) : dispose(cmd.ids)));
  });
  send({ type: 'ready' });
}

void main();
