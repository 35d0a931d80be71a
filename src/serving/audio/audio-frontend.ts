// The HTTP thread's handle on the audio worker: sends uploaded files, gets model windows back.
// One file is decoded at a time (decoding is CPU- and memory-heavy); others wait in a bounded
// FIFO, and a full queue answers 503 with Retry-After. A job whose client leaves is dropped: from
// the queue, or by terminating the worker mid-decode (the WebAssembly decoders cannot be
// interrupted otherwise). If the worker dies (a decoder out of memory on a hostile file), that
// job fails with a 400 and the next starts on a fresh worker. The worker starts on first use and
// is replaced after a long recording, so what its heap grew to goes back to the system.

import type { Worker } from 'node:worker_threads';
import { DEFAULT_MAX_AUDIO_DURATION_SECONDS } from '../../config/server-config';
import { EngineOverloadedError } from '../../engine/errors';
import { startWorkerThread } from '../../engine/worker/worker-thread';
import type { AudioFeatureConfig } from '../../model/audio/feature-config';
import { AudioInputError } from './decode-audio';
import type { AudioWorkerReply, AudioWorkerRequest } from './audio-worker-protocol';
import type { AudioJob, ModelRatePcm, PreparedAudio } from './prepare-audio';

/** Uploads waiting for the decoder before new ones get 503 (each holds its file, up to the size limit). */
const MAX_WAITING_AUDIO_JOBS = 16;
/** A worker that decoded more audio than this in one job is replaced. */
const RECYCLE_AFTER_SECONDS = 60;
const RETRY_AFTER_SECONDS = 5;

interface PendingJob {
  request: AudioWorkerRequest;
  resolve: (result: PreparedAudio | ModelRatePcm) => void;
  reject: (err: Error) => void;
  detach: () => void;
}

export interface AudioFrontendOptions {
  /** Longest audio accepted, in seconds. */
  maxSeconds?: number;
  /** Most uploads waiting behind the one being decoded. */
  maxWaiting?: number;
}

export class AudioFrontend {
  private worker: Worker | null = null;
  private readonly waiting: PendingJob[] = [];
  private running: PendingJob | null = null;
  private nextId = 1;
  private closed = false;
  private readonly maxSeconds: number;
  private readonly maxWaiting: number;

  constructor(
    private readonly features: AudioFeatureConfig,
    options: AudioFrontendOptions = {},
  ) {
    this.maxSeconds = options.maxSeconds ?? DEFAULT_MAX_AUDIO_DURATION_SECONDS;
    this.maxWaiting = options.maxWaiting ?? MAX_WAITING_AUDIO_JOBS;
  }

  /** Decoded, resampled, split and featurized audio; AudioInputError for a bad file. */
  prepare(bytes: Uint8Array, signal?: AbortSignal): Promise<PreparedAudio> {
    return this.run('windows', bytes, signal) as Promise<PreparedAudio>;
  }

  /** The decoded mono signal at the model's sampling rate (no windows, no features). */
  decode(bytes: Uint8Array, signal?: AbortSignal): Promise<ModelRatePcm> {
    return this.run('pcm', bytes, signal) as Promise<ModelRatePcm>;
  }

  private run(kind: AudioJob['kind'], bytes: Uint8Array, signal?: AbortSignal): Promise<PreparedAudio | ModelRatePcm> {
    if (this.closed) return Promise.reject(new Error('the audio front end is shut down'));
    if (signal?.aborted) return Promise.reject(clientLeft());
    if (this.waiting.length >= this.maxWaiting) {
      return Promise.reject(new EngineOverloadedError(`The audio decoder is busy (${this.waiting.length} uploads are waiting); retry later.`, RETRY_AFTER_SECONDS));
    }
    // An exact-size copy: posting a view clones its whole underlying buffer, and an upload may be
    // a view into a larger pool.
    const own = new Uint8Array(bytes);
    const request: AudioWorkerRequest = { id: this.nextId++, job: { kind, bytes: own, features: this.features, maxSeconds: this.maxSeconds } };
    return new Promise((resolve, reject) => {
      const onAbort = () => this.cancel(job);
      const job: PendingJob = { request, resolve, reject, detach: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(job);
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    for (const job of [...this.waiting, ...(this.running ? [this.running] : [])]) settle(job, () => job.reject(new Error('the audio front end is shut down')));
    this.waiting.length = 0;
    this.running = null;
    await worker?.terminate();
  }

  private pump(): void {
    if (this.running || this.closed) return;
    const job = this.waiting.shift();
    if (!job) return;
    this.running = job;
    this.ensureWorker().postMessage(job.request);
  }

  private cancel(job: PendingJob): void {
    const at = this.waiting.indexOf(job);
    if (at >= 0) this.waiting.splice(at, 1);
    else if (this.running === job) {
      this.running = null;
      this.recycleWorker();
    } else return;
    settle(job, () => job.reject(clientLeft()));
    this.pump();
  }

  private recycleWorker(): void {
    void this.worker?.terminate();
    this.worker = null;
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorkerThread(__dirname, 'audio-worker', {});
    // An idle worker must not keep the process alive.
    worker.unref();
    worker.on('message', (reply: AudioWorkerReply) => this.onReply(reply));
    worker.on('error', (err) => this.onWorkerGone(worker, err.message));
    worker.on('exit', (code) => this.onWorkerGone(worker, `exited with code ${code}`));
    this.worker = worker;
    return worker;
  }

  private onReply(reply: AudioWorkerReply): void {
    const job = this.running;
    if (!job || job.request.id !== reply.id) return;
    this.running = null;
    if (reply.type === 'done') {
      if (reply.result.durationSeconds > RECYCLE_AFTER_SECONDS) this.recycleWorker();
      settle(job, () => job.resolve(reply.result));
    } else {
      // A failed decode may have left its decoder's memory grown.
      this.recycleWorker();
      settle(job, () => job.reject(reply.error.name === 'AudioInputError' ? new AudioInputError(reply.error.message) : new Error(reply.error.message)));
    }
    this.pump();
  }

  /** Fails the job the worker was on; the next one starts on a fresh worker. */
  private onWorkerGone(worker: Worker, reason: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    const job = this.running;
    this.running = null;
    if (job) settle(job, () => job.reject(new AudioInputError(`Invalid or unsupported audio file: decoding it stopped the audio decoder (${reason}).`)));
    this.pump();
  }
}

function settle(job: PendingJob, outcome: () => void): void {
  job.detach();
  outcome();
}

function clientLeft(): Error {
  return new Error('The client left before its audio was decoded.');
}
