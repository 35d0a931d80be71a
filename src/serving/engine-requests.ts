// The engine requests of one API request: one per prompt (completions) or conversation (batch
// chat), sharing the request-level extras and one arrival time.

import type { EngineRequest, SamplingParams } from '../engine/types';
import type { RequestExtras } from './serving-options';

export function buildEngineRequests(
  prompts: ReadonlyArray<{ tokenIds: number[] }>,
  params: SamplingParams[],
  extras: Pick<RequestExtras, 'priority' | 'cache_salt'>,
  requestIdOf: (index: number) => string,
): EngineRequest[] {
  const arrivalTime = Date.now();
  return prompts.map((prompt, i) => ({
    requestId: requestIdOf(i),
    promptTokenIds: prompt.tokenIds,
    params: params[i],
    priority: extras.priority ?? 0,
    cacheSalt: extras.cache_salt ?? null,
    arrivalTime,
  }));
}
