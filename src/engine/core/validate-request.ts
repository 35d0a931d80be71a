// What the engine checks of a request. The rules a client can break are checked once, at the
// edge (src/serving, with vLLM's messages); the engine adds the one limit only it knows (the
// KV cache capacity, on the HTTP thread) and, in the core, cheap assertions of the rest: a
// request that breaks one is a bug upstream, refused as an internal error, never queued.

import { EngineInvariantError, RequestValidationError } from '../errors';
import type { EncodeRequest, EngineOptions, EngineRequest, LoraRequest } from '../types';
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
  core: { maxModelLen: number; numBlocks: number; blockSize: number; kvCapacityBlocks?: number },
  options: Pick<EngineOptions, 'maxNumSeqs' | 'schedulingPolicy'>,
  vocabSize: number,
  encoder: EncoderSpec | null,
): EngineLimits {
  return {
    maxModelLen: core.maxModelLen,
    maxNumSeqs: options.maxNumSeqs,
    vocabSize,
    schedulingPolicy: options.schedulingPolicy,
    kvCapacityTokens: (core.kvCapacityBlocks ?? core.numBlocks) * core.blockSize,
    encoder,
    blockSize: core.blockSize,
  };
}

/** KV positions a request holds at most: its tokens plus its cross-attention (encoder) blocks. */
function kvPositionsNeeded(request: EngineRequest, limits: EngineLimits): number {
  const encoderRows = limits.encoder ? Math.ceil(limits.encoder.positions / limits.blockSize) * limits.blockSize : 0;
  return request.promptTokenIds.length + effectiveMaxTokens(request, limits.maxModelLen) + encoderRows;
}

/** Output tokens the request may generate: max_tokens, or up to the context limit when null. */
export function effectiveMaxTokens(request: EngineRequest, maxModelLen: number): number {
  const room = maxModelLen - request.promptTokenIds.length;
  return request.params.max_tokens === null ? room : Math.min(request.params.max_tokens, room);
}

/** A sequence must fit in the KV cache on its own, or preemption could never make room for it. */
export function checkFitsKvCache(request: EngineRequest, limits: EngineLimits): void {
  const needed = kvPositionsNeeded(request, limits);
  if (needed > limits.kvCapacityTokens) {
    throw new RequestValidationError(
      `The request needs up to ${needed} tokens of KV cache, but the cache holds only ${limits.kvCapacityTokens}. ` +
        'Reduce the prompt or max_tokens.',
      'max_tokens',
    );
  }
}

/** Throws EngineInvariantError when a request breaks a rule the edge should have enforced. */
export function assertRequestInvariants(request: EngineRequest, limits: EngineLimits): void {
  const fail = (broken: string): never => {
    throw new EngineInvariantError(`request ${String(request.requestId)} reached the engine with ${broken}`);
  };
  const { params, promptTokenIds } = request;
  if (typeof request.requestId !== 'string' || request.requestId.length === 0) fail('no request id');
  if (promptTokenIds.length === 0) fail('an empty prompt');
  if (!promptTokenIds.every((id) => Number.isInteger(id) && id >= 0 && id < limits.vocabSize)) fail('a prompt token outside the vocabulary');
  const numSeqs = params.best_of ?? params.n;
  if (!(Number.isInteger(params.n) && params.n >= 1 && numSeqs <= limits.maxNumSeqs)) fail(`n=${params.n}, best_of=${params.best_of}`);
  const maxTokens = params.max_tokens;
  if (maxTokens !== null && !(Number.isInteger(maxTokens) && maxTokens >= 1)) fail(`max_tokens=${maxTokens}`);
  if (promptTokenIds.length + (maxTokens ?? 1) > limits.maxModelLen) fail('more tokens than max_model_len');
  if (kvPositionsNeeded(request, limits) > limits.kvCapacityTokens) fail('more tokens than the KV cache holds');
  if ((request.priority ?? 0) !== 0 && limits.schedulingPolicy !== 'priority') fail('a priority under fcfs scheduling');
  // An encoder-decoder model takes exactly one encoder input per request; a decoder-only model none.
  const input = request.encoderInput;
  if (!limits.encoder && input !== undefined) fail('an encoder input for a model without an encoder');
  if (limits.encoder && !(input instanceof Float32Array)) fail('no encoder input for an encoder-decoder model');
  if (limits.encoder && input && input.length !== limits.encoder.inputSize) fail(`an encoder input of ${input.length} values (the model takes ${limits.encoder.inputSize})`);
}

/**
 * The same for a pooling request (src/serving/pooling checks these rules with vLLM's messages).
 * It runs whole, so its prompt may use all of max_model_len.
 */
export function assertEncodeInvariants(request: EncodeRequest, limits: Pick<EngineLimits, 'maxModelLen' | 'vocabSize' | 'schedulingPolicy'>): void {
  const fail = (broken: string): never => {
    throw new EngineInvariantError(`pooling request ${String(request.requestId)} reached the engine with ${broken}`);
  };
  const { promptTokenIds } = request;
  if (typeof request.requestId !== 'string' || request.requestId.length === 0) fail('no request id');
  if (promptTokenIds.length === 0) fail('an empty prompt');
  if (!promptTokenIds.every((id) => Number.isInteger(id) && id >= 0 && id < limits.vocabSize)) fail('a prompt token outside the vocabulary');
  if (promptTokenIds.length > limits.maxModelLen) fail('more tokens than max_model_len');
  if (request.tokenTypeIds != null && request.tokenTypeIds.length !== promptTokenIds.length) fail('token type ids that do not match its tokens');
  if ((request.priority ?? 0) !== 0 && limits.schedulingPolicy !== 'priority') fail('a priority under fcfs scheduling');
}

/** vLLM's message for a request naming an adapter when LoRA is not enabled. */
export function loraNotEnabled(lora: LoraRequest): string {
  return `Got lora_request ${lora.name} but LoRA is not enabled!`;
}

/** A request may name an adapter only with --enable-lora, and the id must be one the server assigned (> 0). */
export function checkLoraRequest(request: EngineRequest, loraEnabled: boolean): void {
  const lora = request.lora;
  if (lora === undefined || lora === null) return;
  if (!loraEnabled) throw new RequestValidationError(loraNotEnabled(lora), 'model');
  if (!Number.isInteger(lora.id) || lora.id <= 0) throw new EngineInvariantError(`LoRA adapter '${lora.name}' has id ${lora.id}; ids are integers > 0`);
}
