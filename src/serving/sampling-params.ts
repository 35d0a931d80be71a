// Request fields -> engine SamplingParams. generation_config.json defaults apply only to
// fields the caller did not send; the rest get vLLM's defaults and checks from
// src/engine/sampling-params.ts. Errors name the field as the client sent it.

import { RequestValidationError } from '../engine/errors';
import { normalizeSamplingParams, validateSamplingParams } from '../engine/sampling-params';
import { OUTPUT_KIND, type SamplingParams } from '../engine/types';
import type { GenerationDefaults } from '../model/types';
import type { SamplingRequestFields } from './sampling-request';
import { structuredOutputsFromRequest } from './structured-outputs';

export interface SamplingContext {
  /** Keys the caller sent with a non-null value (see sentFields()). */
  sent: ReadonlySet<string>;
  generationDefaults: GenerationDefaults;
  /** Already resolved by resolveMaxTokens(). */
  maxTokens: number;
  /** Sampled-token logprobs resolved per endpoint (completions `logprobs`, chat `top_logprobs`). */
  logprobs: number | null;
  /** Request field names where they differ from SamplingParams' (chat: logprobs -> top_logprobs). */
  paramNames?: Partial<Record<keyof SamplingParams, string>>;
  vocabSize: number;
  maxNumSeqs: number;
  maxLogprobs: number;
  /** Streaming responses consume deltas; others only need the final state. */
  stream: boolean;
  /** False without a tokenizer (--skip-tokenizer-init): token ids only, no text. */
  detokenize?: boolean;
}

/** generation_config.json keys that default request fields of the same name. */
const GENERATION_DEFAULT_FIELDS = ['temperature', 'top_p', 'top_k', 'min_p', 'repetition_penalty'] as const;

export function buildSamplingParams(req: SamplingRequestFields, ctx: SamplingContext): SamplingParams {
  const partial: Partial<SamplingParams> & Record<string, unknown> = {};
  for (const key of GENERATION_DEFAULT_FIELDS) {
    const value = ctx.generationDefaults[key];
    if (!ctx.sent.has(key) && typeof value === 'number') partial[key] = value;
  }
  const copied: Array<keyof SamplingRequestFields & keyof SamplingParams> = [
    'n', 'best_of', 'temperature', 'top_p', 'top_k', 'min_p', 'presence_penalty', 'frequency_penalty',
    'repetition_penalty', 'length_penalty', 'seed', 'stop', 'stop_token_ids', 'include_stop_str_in_output',
    'ignore_eos', 'min_tokens', 'skip_special_tokens', 'spaces_between_special_tokens', 'truncate_prompt_tokens',
    'truncation_side', 'logit_bias', 'allowed_token_ids', 'bad_words', 'prompt_logprobs', 'logprob_token_ids',
    'repetition_detection', 'use_beam_search',
  ];
  for (const key of copied) if (ctx.sent.has(key)) partial[key] = req[key] as never;
  if (ctx.sent.has('vllm_xargs')) partial.extra_args = req.vllm_xargs;
  partial.max_tokens = ctx.maxTokens;
  partial.logprobs = ctx.logprobs;
  // With logprobs the engine sends every step's part even when the answer is not streamed: one
  // final output of n × 2,000 positions × 20 top entries is one long structured-clone read on the
  // HTTP thread; per-step parts are folded as they come (drainAll).
  partial.output_kind = ctx.stream || ctx.logprobs != null ? OUTPUT_KIND.DELTA : OUTPUT_KIND.FINAL_ONLY;
  partial.detokenize = ctx.detokenize ?? true;
  const structured = structuredOutputsFromRequest(req);
  partial.structured_outputs = structured?.params ?? null;
  const paramNames = structured ? { ...ctx.paramNames, structured_outputs: structured.param } : ctx.paramNames;
  try {
    const params = normalizeSamplingParams(partial);
    validateSamplingParams(params, { vocabSize: ctx.vocabSize, maxNumSeqs: ctx.maxNumSeqs, maxLogprobs: ctx.maxLogprobs });
    return params;
  } catch (err) {
    if (!(err instanceof RequestValidationError) || !err.param) throw err;
    // 'structured_outputs.json' is renamed by the 'structured_outputs' entry too (response_format, guided_json…).
    const field = err.param.split('.')[0] as keyof SamplingParams;
    const renamed = paramNames?.[err.param as keyof SamplingParams] ?? paramNames?.[field];
    throw renamed ? new RequestValidationError(err.message, renamed) : err;
  }
}
