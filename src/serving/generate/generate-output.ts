// Turns the engine's RequestOutput stream into /inference/v1/generate responses: one JSON body
// (non-streaming) or a sequence of chunks (streaming), in vLLM's wire shapes for both output modes.

import { OpenAIHttpError } from '../openai-error';
import type { CompletionOutput, RequestOutput, SamplingParams } from '../../engine/types';
import { throwIfGenerationError } from '../engine-stream';
import { createdNow } from '../ids';
import { chatLogprobEntries, formatPromptLogprobs, type TokenNamer } from '../logprobs';
import { buildUsage, UsageInfo } from '../usage';
import type {
  GenerateChoice,
  GenerateResponse,
  GenerateStreamResponse,
  OutputMode,
  WeightVersionSpan,
} from './generate-types';
import { buildTokensLogprobs } from './tokens-logprobs';

/** Everything about one accepted request that shapes its responses. */
export interface GenerateJob {
  requestId: string;
  model: string;
  outputMode: OutputMode;
  params: SamplingParams;
  returnTokenIds: boolean;
  ecTransferParams: Record<string, unknown> | null;
  includeUsage: boolean;
  continuousUsage: boolean;
  enablePromptTokensDetails: boolean;
  /**
   * Names tokens: text-mode logprobs (decoded strings + bytes, or token_id:N with
   * --return-tokens-as-token-ids) and prompt_logprobs' decoded_token.
   */
  namer: TokenNamer;
}

/** The engine labels every output with the same weights until weight updates exist. */
const DEFAULT_WEIGHT_VERSION = 'default';

function weightVersions(numTokens: number): WeightVersionSpan[] {
  return [{ version: DEFAULT_WEIGHT_VERSION, start: 0, end: numTokens }];
}

function choiceLogprobs(job: GenerateJob, output: CompletionOutput): GenerateChoice['logprobs'] {
  const k = job.params.logprobs;
  if (k === null || !output.logprobs) return null;
  if (job.outputMode === 'text') return { content: chatLogprobEntries(output.logprobs, k, job.namer) };
  return buildTokensLogprobs(output.logprobs, k);
}

/** The non-streaming body, from the engine's final output. */
function buildGenerateResponse(job: GenerateJob, result: RequestOutput): GenerateResponse {
  const choices: GenerateChoice[] = [];
  let completionTokens = 0;
  throwIfGenerationError(result);
  for (const output of [...result.outputs].sort((a, b) => a.index - b.index)) {
    const choice: GenerateChoice = {
      index: output.index,
      finish_reason: output.finishReason ?? 'stop',
      token_ids: [...output.tokenIds],
      logprobs: choiceLogprobs(job, output),
      routed_experts: null,
      sampling_mask: null,
      weight_versions: weightVersions(output.tokenIds.length),
    };
    if (job.outputMode === 'text') choice.text = output.text;
    choices.push(choice);
    completionTokens += output.tokenIds.length;
  }
  const promptTokens = result.promptTokenIds.length;
  return {
    request_id: job.requestId,
    output_mode: job.outputMode,
    model: job.model,
    created: createdNow(),
    choices,
    usage: buildUsage(promptTokens, completionTokens, result.numCachedTokens, job),
    prompt_logprobs: formatPromptLogprobs(result.promptLogprobs, job.namer),
    prompt_token_ids: job.returnTokenIds ? [...result.promptTokenIds] : null,
    mm_placeholders: null,
    metrics: null,
    kv_transfer_params: result.kvTransferParams ?? null,
    ec_transfer_params: job.ecTransferParams,
  };
}

/** Drains a non-streaming engine stream (FINAL_ONLY or CUMULATIVE: the last output is complete). */
export async function collectGenerateResponse(job: GenerateJob, outputs: AsyncIterable<RequestOutput>): Promise<GenerateResponse> {
  let last: RequestOutput | null = null;
  for await (const result of outputs) last = result;
  if (!last) throw new OpenAIHttpError(500, 'The engine returned no output', null);
  return buildGenerateResponse(job, last);
}

/**
 * Streaming chunks from a DELTA engine stream. One choice per chunk. An output without new token
 * ids is skipped unless it carries a finish_reason (the final output of an abort) or, in text mode,
 * new text (text held back for stop matching).
 */
export async function* generateStreamChunks(
  job: GenerateJob,
  outputs: AsyncIterable<RequestOutput>,
): AsyncGenerator<GenerateStreamResponse> {
  let promptTokens = 0;
  let cachedTokens = 0;
  const generated = new Map<number, number>();
  let first = true;
  for await (const result of outputs) {
    promptTokens = result.promptTokenIds.length;
    cachedTokens = result.numCachedTokens;
    // finish_reason "error" is a failed generation: 500, or an error frame once streaming.
    throwIfGenerationError(result);
    for (const output of result.outputs) {
      const total = (generated.get(output.index) ?? 0) + output.tokenIds.length;
      generated.set(output.index, total);
      // A finish (an abort's included) always gets its chunk, so the stream ends with its reason.
      const hasNews = output.tokenIds.length > 0 || output.finishReason !== null || (job.outputMode === 'text' && output.text.length > 0);
      if (!hasNews) continue;
      const choice: GenerateChoice = {
        index: output.index,
        finish_reason: output.finishReason,
        token_ids: [...output.tokenIds],
        logprobs: output.tokenIds.length > 0 ? choiceLogprobs(job, output) : null,
        routed_experts: null,
        sampling_mask: null,
        weight_versions: output.finishReason !== null ? weightVersions(total) : null,
      };
      if (job.outputMode === 'text') choice.text = output.text;
      const chunk: GenerateStreamResponse = {
        request_id: job.requestId,
        output_mode: job.outputMode,
        choices: [choice],
        usage: job.continuousUsage ? buildUsage(promptTokens, total, cachedTokens, job) : null,
        prompt_token_ids: first && job.returnTokenIds ? [...result.promptTokenIds] : null,
        mm_placeholders: null,
        metrics: null,
      };
      first = false;
      yield chunk;
    }
  }
  if (job.includeUsage) {
    let completionTokens = 0;
    for (const n of generated.values()) completionTokens += n;
    const usage: UsageInfo = buildUsage(promptTokens, completionTokens, cachedTokens, job);
    yield { request_id: job.requestId, output_mode: job.outputMode, choices: [], usage };
  }
}
