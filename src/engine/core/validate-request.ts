// Checks a request against the engine's limits before it is queued, so a bad request
// gets a 400 and never enters (or disturbs) the running batch.

import { RequestValidationError } from '../errors';
import { validateSamplingParams } from '../sampling-params';
import type { EngineOptions, EngineRequest } from '../types';
import type { EncoderSpec } from '../../model/encoder-spec';

export interface EngineLimits {
  maxModelLen: number;
  maxNumSeqs: number;
  vocabSize: number;
  schedulingPolicy: EngineOptions['schedulingPolicy'];
  /** Tokens the KV cache can hold for one sequence (numBlocks * blockSize). */
  kvCapacityTokens: number;
  /** Encoder-decoder models: every request brings an encoder input of this size; null for decoder-only models. */
  encoder: EncoderSpec | null;
  blockSize: number;
}

export function engineLimits(
  core: { maxModelLen: number; numBlocks: number; blockSize: number },
  options: Pick<EngineOptions, 'maxNumSeqs' | 'schedulingPolicy'>,
  vocabSize: number,
  encoder: EncoderSpec | null,
): EngineLimits {
  return {
    maxModelLen: core.maxModelLen,
    maxNumSeqs: options.maxNumSeqs,
    vocabSize,
    schedulingPolicy: options.schedulingPolicy,
    kvCapacityTokens: core.numBlocks * core.blockSize,
    encoder,
    blockSize: core.blockSize,
  };
}

/** Output tokens the request may generate: max_tokens, or up to the context limit when null. */
export function effectiveMaxTokens(request: EngineRequest, maxModelLen: number): number {
  const room = maxModelLen - request.promptTokenIds.length;
  return request.params.max_tokens === null ? room : Math.min(request.params.max_tokens, room);
}

export function validateEngineRequest(request: EngineRequest, limits: EngineLimits): void {
  const { params, promptTokenIds } = request;
  if (typeof request.requestId !== 'string' || request.requestId.length === 0) {
    throw new RequestValidationError('request_id must be a non-empty string.', 'request_id');
  }
  validateSamplingParams(params, { vocabSize: limits.vocabSize, maxNumSeqs: limits.maxNumSeqs });

  const priority = request.priority ?? 0;
  if (!Number.isInteger(priority)) throw new RequestValidationError(`priority must be an integer, got ${priority}.`, 'priority');
  if (priority !== 0 && limits.schedulingPolicy !== 'priority') {
    throw new RequestValidationError('Got priority != 0 but the scheduling policy is not "priority".', 'priority');
  }

  checkEncoderInput(request, limits);
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
  const encoderRows = limits.encoder ? Math.ceil(limits.encoder.positions / limits.blockSize) * limits.blockSize : 0;
  const needed = promptLen + effectiveMaxTokens(request, limits.maxModelLen) + encoderRows;
  if (needed > limits.kvCapacityTokens) {
    throw new RequestValidationError(
      `The request needs up to ${needed} tokens of KV cache, but the cache holds only ${limits.kvCapacityTokens}. ` +
        'Reduce the prompt or max_tokens.',
      'max_tokens',
    );
  }
}

/** An encoder-decoder model takes exactly one encoder input per request; a decoder-only model none. */
function checkEncoderInput(request: EngineRequest, limits: EngineLimits): void {
  const input = request.encoderInput;
  if (!limits.encoder) {
    if (input !== undefined) throw new RequestValidationError('This model has no encoder: requests cannot carry encoder input.', 'encoder_input');
    return;
  }
  if (!(input instanceof Float32Array)) {
    throw new RequestValidationError('This is an encoder-decoder (speech-to-text) model: every request needs its audio input.', 'encoder_input');
  }
  if (input.length !== limits.encoder.inputSize) {
    throw new RequestValidationError(`The encoder input has ${input.length} values; this model takes ${limits.encoder.inputSize}.`, 'encoder_input');
  }
}
