// Entry point of the audio worker thread: prepares uploaded files one at a time (FIFO), so a
// long decode never blocks the HTTP thread. The front end sends one job at a time.

import { parentPort } from 'node:worker_threads';
import { decodeToModelRate, prepareAudio, type AudioJob } from './prepare-audio';
import type { AudioWorkerReply, AudioWorkerRequest } from './audio-worker-protocol';

const port = parentPort;
if (!port) throw new Error('audio-worker must run in a worker thread');

let queue: Promise<void> = Promise.resolve();

port.on('message', (request: AudioWorkerRequest) => {
  queue = queue.then(() => handle(request.id, request.job));
});

async function handle(id: number, job: AudioJob): Promise<void> {
  try {
    if (job.kind === 'pcm') {
      const result = await decodeToModelRate(job);
      const reply: AudioWorkerReply = { type: 'done', id, result };
      port!.postMessage(reply, [result.samples.buffer as ArrayBuffer]);
    } else {
      const result = await prepareAudio(job);
      const reply: AudioWorkerReply = { type: 'done', id, result };
      port!.postMessage(reply, result.windows.map((w) => w.features.buffer as ArrayBuffer));
    }
  } catch (err) {
    const error = err instanceof Error ? { name: err.name, message: err.message } : { name: 'Error', message: String(err) };
    port!.postMessage({ type: 'failed', id, error } satisfies AudioWorkerReply);
  }
}
