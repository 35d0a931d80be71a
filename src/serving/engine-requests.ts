// The engine requests of one API request: one per prompt (completions) or conversation (batch
// chat), sharing the request-level extras, the LoRA adapter and one arrival time.

import { RequestValidationError } from '../engine/errors';
import { nowMs } from '../engine/clock';
import type { EngineClient, EngineRequest, LoraRequest, SamplingParams, SequenceReservation } from '../engine/types';
import type { RequestExtras } from './serving-options';

export function buildEngineRequests(
  prompts: ReadonlyArray<{ tokenIds: number[] }>,
  params: SamplingParams[],
  extras: Pick<RequestExtras, 'priority' | 'cache_salt' | 'kv_transfer_params'>,
  requestIdOf: (index: number) => string,
  lora: LoraRequest | null = null,
): EngineRequest[] {
  const arrivalTime = nowMs();
  const kv = extras.kv_transfer_params;
  // One response carries one set of params: the other prompts' KV would stay pinned unpulled.
  if (prompts.length > 1 && kv && (kv.do_remote_decode === true || kv.do_remote_prefill === true)) {
    throw new RequestValidationError('kv_transfer_params: a prefill or decode of a disaggregated request takes one prompt', 'kv_transfer_params');
  }
  return prompts.map((prompt, i) => ({
    requestId: requestIdOf(i),
    promptTokenIds: prompt.tokenIds,
    params: params[i],
    priority: extras.priority ?? 0,
    cacheSalt: extras.cache_salt ?? null,
    kvTransferParams: extras.kv_transfer_params ?? null,
    arrivalTime,
    lora,
  }));
}

/**
 * Refuses a request the engine has no room for (503 overloaded, or 400 too big on its own, naming
 * `promptParam` when it has several prompts, else `n`) before its prompts are tokenized:
 * `prompts` engine requests of max(n, best_of) sequences each.
 */
export function ensureRoomFor(engine: EngineClient, prompts: number, fields: { n?: number | null; best_of?: number | null }, promptParam: string): void {
  const perPrompt = Math.max(1, fields.n ?? 1, fields.best_of ?? 0);
  engine.ensureCapacity(prompts * perPrompt, prompts > 1 ? promptParam : 'n');
}

/** Sequences one engine request runs: n, or best_of when larger (beam search: its width). */
export function sequencesOf(request: EngineRequest): number {
  return Math.max(1, request.params.n, request.params.best_of ?? 0);
}

/**
 * Room for every sequence of a request's engine requests, taken at once before the first reaches
 * the engine, so concurrent requests are admitted or refused whole (503 / 400 as ensureRoomFor).
 */
export function reserveRoomFor(engine: EngineClient, requests: readonly EngineRequest[]): SequenceReservation {
  return engine.reserve(requests.reduce((sum, r) => sum + sequencesOf(r), 0));
}
