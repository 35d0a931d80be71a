// Messages between the HTTP thread (AudioFrontend) and the audio worker.

import type { AudioJob, ModelRatePcm, PreparedAudio } from './prepare-audio';

export interface AudioWorkerRequest {
  id: number;
  job: AudioJob;
}

export type AudioWorkerReply =
  | { type: 'done'; id: number; result: PreparedAudio | ModelRatePcm }
  | { type: 'failed'; id: number; error: { name: string; message: string } };
