// What the served model does, known before it loads (the HTTP routes are chosen from it):
// 'transcription' for speech-to-text models (Whisper: config.json model_type "whisper", or
// builtin:whisper-tiny), 'generate' for text models.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonFile } from './hf/hf-tokenizer-files';
import type { LoadModelOptions } from './types';

export type ModelTask = 'generate' | 'transcription';

const SPEECH_MODEL_TYPES = new Set(['whisper']);
const SPEECH_BUILTINS = new Set(['builtin:whisper-tiny']);

export function modelTask(opts: Pick<LoadModelOptions, 'model' | 'loadFormat'>): ModelTask {
  const { model } = opts;
  if (model === null || opts.loadFormat === 'dummy') return 'generate';
  if (SPEECH_BUILTINS.has(model)) return 'transcription';
  if (!existsSync(model) || !statSync(model).isDirectory()) return 'generate';
  const modelType = readJsonFile(join(model, 'config.json'))?.model_type;
  return typeof modelType === 'string' && SPEECH_MODEL_TYPES.has(modelType) ? 'transcription' : 'generate';
}
