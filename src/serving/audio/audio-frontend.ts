// The HTTP thread's handle on the audio worker: sends uploaded files, gets model windows back.
// The worker starts on first use. If it dies (a decoder running out of memory on a hostile file),
// the job it was working on fails with a 400 and the jobs queued behind it go to a new worker,
// so one bad upload never takes the server or other requests down.

import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '../../engine/worker/worker-thread';
import type { AudioFeatureConfig } from '../../model/audio/feature-config';
import { AudioInputError } from './decode-audio';
import type { AudioWorkerReply, AudioWorkerRequest } from './audio-worker-protocol';
import type { AudioJob, ModelRatePcm, PreparedAudio } from './prepare-audio';

/** Longest recording accepted (a 25 MB upload of low-bitrate audio can hold many hours). */
export const MAX_AUDIO_SECONDS = 2 * 60 * 60;

interface PendingJob {
  request: AudioWorkerRequest;
  resolve: (result: PreparedAudio | ModelRatePcm) => void;
  reject: (err: Error) => void;
}

export class AudioFrontend {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, PendingJob>();
  private current: number | null = null;
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly features: AudioFeatureConfig,
    private readonly maxSeconds = MAX_AUDIO_SECONDS,
  ) {}

  /** Decoded, resampled, split and featurized audio; AudioInputError for a bad file. */
  prepare(bytes: Uint8Array): Promise<PreparedAudio> {
    return this.run('windows', bytes) as Promise<PreparedAudio>;
  }

  /** The decoded mono signal at the model's sampling rate (no windows, no features). */
  decode(bytes: Uint8Array): Promise<ModelRatePcm> {
    return this.run('pcm', bytes) as Promise<ModelRatePcm>;
  }

  private run(kind: AudioJob['kind'], bytes: Uint8Array): Promise<PreparedAudio | ModelRatePcm> {
    if (this.closed) return Promise.reject(new Error('the audio front end is shut down'));
    // An exact-size copy: posting a view clones its whole underlying buffer, and an upload may be
    // a view into a larger pool. The copy stays here so a job can be resent to a new worker.
    const own = new Uint8Array(bytes);
    const request: AudioWorkerRequest = { id: this.nextId++, job: { kind, bytes: own, features: this.features, maxSeconds: this.maxSeconds } };
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { request, resolve, reject });
      this.send(request);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    for (const job of this.pending.values()) job.reject(new Error('the audio front end is shut down'));
    this.pending.clear();
    await worker?.terminate();
  }

  private send(request: AudioWorkerRequest): void {
    this.ensureWorker().postMessage(request);
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
    if (reply.type === 'started') {
      this.current = reply.id;
      return;
    }
    const job = this.pending.get(reply.id);
    this.current = null;
    if (!job) return;
    this.pending.delete(reply.id);
    if (reply.type === 'done') {
      job.resolve(reply.result);
    } else {
      job.reject(reply.error.name === 'AudioInputError' ? new AudioInputError(reply.error.message) : new Error(reply.error.message));
    }
  }

  /** Fails the job the worker was on; the queued ones start over on a fresh worker. */
  private onWorkerGone(worker: Worker, reason: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    if (this.closed) return;
    const blamed = this.current;
    this.current = null;
    if (blamed !== null) {
      const job = this.pending.get(blamed);
      this.pending.delete(blamed);
      job?.reject(new AudioInputError(`Invalid or unsupported audio file: decoding it stopped the audio decoder (${reason}).`));
    }
    for (const job of this.pending.values()) this.send(job.request);
  }
}
