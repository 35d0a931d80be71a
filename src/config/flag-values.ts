// Value types and choice lists of `ortllm serve` flags that other layers name too.

import { availableParallelism } from 'node:os';
import type { KvCacheDtypeFlag } from '../model/runner/kv-dtype';

export type LogLevel = 'critical' | 'error' | 'warning' | 'info' | 'debug' | 'trace';
export const LOG_LEVELS: readonly LogLevel[] = ['critical', 'error', 'warning', 'info', 'debug', 'trace'];
/** What happens to request fields an endpoint does not declare: logged (warning or debug level) and ignored, or refused. */
export type UnknownFieldsAction = 'warn' | 'reject' | 'ignore';
export const UNKNOWN_FIELDS_ACTIONS: readonly UnknownFieldsAction[] = ['warn', 'reject', 'ignore'];
/** --dtype after aliases (half -> float16, float -> float32); see model/graph/compute-dtype.ts. */
export type ModelDtype = 'auto' | 'float32' | 'float16' | 'bfloat16';
/** --kv-cache-dtype; what each value stores is model/runner/kv-dtype.ts's table. */
export type { KvCacheDtypeFlag };
export type TokenizerMode = 'auto' | 'hf' | 'slow';
/** The deprecated --task values (vLLM's TaskOption, text models). */
export const TASKS = ['auto', 'generate', 'embedding', 'embed', 'classify', 'score', 'reward'] as const;
export type TaskFlag = (typeof TASKS)[number];

/** vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB default. */
export const DEFAULT_MAX_AUDIO_CLIP_FILESIZE_MB = 25;
export const DEFAULT_MAX_AUDIO_DURATION_SECONDS = 2 * 60 * 60;

/** Name reported for the built-in dummy model when no --served-model-name is given. */
export const DUMMY_MODEL_NAME = 'ortllm-dummy';

/**
 * Text workers: two, so a normal prompt never waits behind a huge one, up to four on larger
 * machines (a quarter of the cores); an idle one costs only its copy of the tokenizer.
 */
export function defaultTokenizerPoolSize(): number {
  return Math.min(4, Math.max(2, Math.floor(availableParallelism() / 4)));
}
