// Entry of a compile-trial worker: compiles each spec it is sent against the model's vocabulary
// in its own xgrammar instance (heap capped) and keeps nothing. After a trap it exits: the
// pool starts a fresh worker, so a corrupt instance never serves another spec.

import { parentPort, workerData } from 'node:worker_threads';
import { RequestValidationError } from '../errors';
import { StructuredOutputCompiler } from './grammar-compiler';
import type { TrialCommand, TrialReply, TrialWorkerData } from './grammar-trial-protocol';
import { loadXgrammar } from './xgrammar';

async function main(): Promise<void> {
  const port = parentPort!;
  const data = workerData as TrialWorkerData;
  const send = (reply: TrialReply) => port.postMessage(reply);
  let compiler: StructuredOutputCompiler;
  try {
    await loadXgrammar(data.heapMaxBytes);
    compiler = await StructuredOutputCompiler.fromVocab(data.vocab, data.stopTokenIds, 0);
  } catch (err) {
    send({ type: 'startup-error', error: err instanceof Error ? err.message : String(err) });
    return;
  }
  port.on('message', (cmd: TrialCommand) => {
    try {
      compiler.compile(cmd.spec);
      send({ type: 'passed', id: cmd.id });
    } catch (err) {
      if (err instanceof RequestValidationError) {
        send({ type: 'refused', id: cmd.id, message: err.message, param: err.param });
        return;
      }
      send({ type: 'trapped', id: cmd.id, message: err instanceof Error ? err.message : String(err) });
      port.close();
      process.exit(1);
    }
  });
  send({ type: 'ready' });
}

void main();
