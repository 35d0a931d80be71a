// Entry point of a text worker thread: loads the tokenizer and chat template (no weights) the
// way the HTTP thread does, then answers tokenize / detokenize / render jobs one at a time.

import { parentPort, workerData } from 'node:worker_threads';
import { loadModel } from '../../model/load-model';
import { PromptTooLongError } from '../errors';
import type { LoadModelOptions } from '../../model/types';
import { packTokenIds, runTextJob, TextJobs, type TextWorkerReply, type TextWorkerRequest } from './text-jobs';

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('text-worker must run in a worker thread');
  const send = (reply: TextWorkerReply): void => port.postMessage(reply);
  let jobs: TextJobs;
  try {
    const model = await loadModel({ ...(workerData as { load: LoadModelOptions }).load, loadWeights: false });
    if (!model.tokenizer) throw new Error('the model has no tokenizer');
    jobs = new TextJobs(model.tokenizer, model.chatTemplate);
  } catch (err) {
    send({ type: 'startup-error', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    return;
  }
  port.on('message', ({ id, job }: TextWorkerRequest) => {
    try {
      const { result, transfer } = packTokenIds(runTextJob(jobs, job), job.op);
      const reply: TextWorkerReply = { type: 'done', id, result };
      port.postMessage(reply, transfer);
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      send({ type: 'failed', id, name: e.name, message: e.message, atLeast: e instanceof PromptTooLongError ? e.atLeast : undefined });
    }
  });
  send({ type: 'ready' });
}

void main();
