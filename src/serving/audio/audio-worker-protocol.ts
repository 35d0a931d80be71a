// Messages between the HTTP thread (AudioFrontend) and the audio worker.

import type { AudioJob, ModelRatePcm, PreparedAudio } from './prepare-audio';

export interface AudioWorkerRequest {
  id: number;
  job: AudioJob;
}

export type AudioWorkerReply =
  /** The worker began this job (a crash from now on is blamed on it). */
  | { type: 'started'; id: number }
  | { type: 'done'; id: number; result: PreparedAudio | ModelRatePcm }
  | { type: 'failed'; id: number; error: { name: string; message: string } };
