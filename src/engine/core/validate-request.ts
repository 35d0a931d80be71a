// Checks a request against the engine's limits before it is queued, so a bad request
// gets a 400 and never enters (or disturbs) the running batch.

import { RequestValidationError } from '../errors';
import { validateSamplingParams } from '../sampling-params';
import type { EngineOptions, EngineRequest } from '../types';

export interface EngineLimits {
  maxModelLen: number;
  maxNumSeqs: number;
  vocabSize: number;
  schedulingPolicy: EngineOptions['schedulingPolicy'];
  /** Tokens the KV cache can hold for one sequence (numBlocks * blockSize). */
  kvCapacityTokens: number;
}

export function engineLimits(
  core: { maxModelLen: number; numBlocks: number; blockSize: number },
  options: Pick<EngineOptions, 'maxNumSeqs' | 'schedulingPolicy'>,
  vocabSize: number,
): EngineLimits {
  return {
    maxModelLen: core.maxModelLen,
    maxNumSeqs: options.maxNumSeqs,
    vocabSize,
    schedulingPolicy: options.schedulingPolicy,
    kvCapacityTokens: core.numBlocks * core.blockSize,
  };
}

/** Output tokens the request may generate: max_tokens, or up to the context limit when null. */
export function effectiveMaxTokens(request: EngineRequest, maxModelLen: number): number {
  const room = maxModelLen - request.promptTokenIds.length;
  return request.params.max_tokens === null ? room : Math.min(request.params.max_tokens, room);
}

/** `parseGrammar`: see SamplingValidationContext (the core leaves it to the grammar compile). */
export function validateEngineRequest(request: EngineRequest, limits: EngineLimits, parseGrammar = true): void {
  const { params, promptTokenIds } = request;
  if (typeof request.requestId !== 'string' || request.requestId.length === 0) {
    throw new RequestValidationError('request_id must be a non-empty string.', 'request_id');
  }
  validateSamplingParams(params, { vocabSize: limits.vocabSize, maxNumSeqs: limits.maxNumSeqs, parseGrammar });

  const priority = request.priority ?? 0;
  if (!Number.isInteger(priority)) throw new RequestValidationError(`priority must be an integer, got ${priority}.`, 'priority');
  if (priority !== 0 && limits.schedulingPolicy !== 'priority') {
    throw new RequestValidationError('Got priority != 0 but the scheduling policy is not "priority".', 'priority');
  }

  if (promptTokenIds.length === 0) throw new RequestValidationError('The decoder prompt cannot be empty.', 'prompt');
  for (const id of promptTokenIds) {
    if (!Number.isInteger(id) || id < 0 || id >= limits.vocabSize) {
      throw new RequestValidationError(`Token id ${id} is out of vocabulary (vocab size ${limits.vocabSize}).`, 'prompt');
    }
  }

  const promptLen = promptTokenIds.length;
  if (promptLen >= limits.maxModelLen) {
    throw new RequestValidationError(
      `This model's maximum context length is ${limits.maxModelLen} tokens. However, your request has ${promptLen} input tokens. ` +
        'Please reduce the length of the input messages.',
      'prompt',
    );
  }
  const maxTokens = params.max_tokens;
  if (maxTokens !== null && promptLen + maxTokens > limits.maxModelLen) {
    throw new RequestValidationError(
      `'max_tokens' is too large: ${maxTokens}. This model's maximum context length is ${limits.maxModelLen} tokens ` +
        `and your request has ${promptLen} input tokens (${maxTokens} > ${limits.maxModelLen} - ${promptLen}).`,
      'max_tokens',
    );
  }
  const numSeqs = params.best_of ?? params.n;
  if (numSeqs > limits.maxNumSeqs) {
    throw new RequestValidationError(`best_of must be at most the server's max_num_seqs (${limits.maxNumSeqs}), got ${numSeqs}.`, 'best_of');
  }
  // A sequence must fit in the KV cache on its own, or preemption could never make room for it.
  const needed = promptLen + effectiveMaxTokens(request, limits.maxModelLen);
  if (needed > limits.kvCapacityTokens) {
    throw new RequestValidationError(
      `The request needs up to ${needed} tokens of KV cache, but the cache holds only ${limits.kvCapacityTokens}. ` +
        'Reduce the prompt or max_tokens.',
      'max_tokens',
    );
  }
}
