// /v1/completions: request -> engine requests (one per prompt) -> OpenAI completion JSON or
// SSE chunks. Plain TypeScript so controllers stay thin and /render can reuse prepare().

import { setMaxListeners } from 'node:events';
import type { EngineRequest, RequestOutput, SamplingParams } from '../engine/types';
import { RequestValidationError } from '../engine/errors';
import { countCompletionPrompts, prepareCompletionPrompts, type PreparedPrompt } from './completion-prompts';
import { drainAll, foldOutput, generateFor, mergeStreams, type PromptResult } from './engine-stream';
import { NO_PARSERS, structuredOutputsAfter } from './chat-output';
import { buildEngineRequests, ensureRoomFor, reserveRoomFor } from './engine-requests';
import { ChunkTemplate, plainCompletionChoiceJson } from './chunk-template';
import { createdNow } from './ids';
import { appendCompletionLogprobs, appendCompletionLogprobsTakingTurns, emptyCompletionLogprobs, formatPromptLogprobs, type CompletionLogprobs } from './logprobs';
import { OpenAIServing } from './openai-serving';
import { buildSamplingParams } from './sampling-params';
import { sentFields, type SamplingRequestFields } from './sampling-request';
import type { RequestExtras } from './serving-options';
import { UNSUPPORTED_COMMON_FIELDS } from './unsupported';
import { streamUsageFlags, sumUsage, type StreamOptions, type UsageInfo } from './usage';
import { takeTurn } from './yield-budget';

/** vLLM's default max_tokens for completions. */
const COMPLETION_DEFAULT_MAX_TOKENS = 16;

export interface CompletionRequestBody extends SamplingRequestFields, RequestExtras {
  model?: string | null;
  prompt?: unknown;
  suffix?: string | null;
  logprobs?: number | null;
  echo?: boolean | null;
  stream_options?: StreamOptions | null;
  user?: string | null;
  add_special_tokens?: boolean | null;
  return_tokens_as_token_ids?: boolean | null;
  return_token_ids?: boolean | null;
  [key: string]: unknown;
}

export interface PreparedCompletion {
  id: string;
  model: string;
  created: number;
  prompts: PreparedPrompt[];
  /** Sampling params per prompt (max_tokens depends on each prompt's length). */
  params: SamplingParams[];
  engineRequests: EngineRequest[];
  body: CompletionRequestBody;
  /** echo with max_tokens 0: only the prompt (and its logprobs) comes back, as vLLM does for scoring. */
  echoOnly: boolean;
}

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: string | null;
  stop_reason: string | number | null;
  token_ids?: number[] | null;
  prompt_logprobs?: unknown;
  prompt_token_ids?: number[] | null;
}

export interface CompletionResponse {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  service_tier: null;
  system_fingerprint: null;
  usage: UsageInfo;
  kv_transfer_params: Record<string, unknown> | null;
}

export interface CompletionChunk {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage?: UsageInfo | null;
}

export class CompletionServing extends OpenAIServing {
  /** Validates and turns the body into engine requests (ids from `idBase`, see requestIdBase); throws 400/404 errors. */
  async prepare(body: CompletionRequestBody, idBase: string): Promise<PreparedCompletion> {
    const { name: model, lora } = await this.resolveModel(body.model);
    if (body.suffix != null) throw new RequestValidationError('suffix is not currently supported', 'suffix');
    this.checkCommonFields(body, { unsupported: UNSUPPORTED_COMMON_FIELDS, allowListXargs: false });
    if (body.prompt == null) {
      throw new RequestValidationError('Either prompt or prompt_embeds must be provided and non-empty.', 'prompt');
    }
    if (body.stream && body.prompt_logprobs != null) {
      throw new RequestValidationError('`prompt_logprobs` are not available when `stream=True`.', 'prompt_logprobs');
    }
    if (body.stream && body.best_of != null && body.best_of !== (body.n ?? 1)) {
      throw new RequestValidationError('best_of != n is not supported when streaming.', 'best_of');
    }
    if (body.stream_options != null && !body.stream) {
      throw new RequestValidationError('Stream options can only be defined when `stream=True`.', 'stream_options');
    }
    const engine = this.engine;
    const vocabSize = engine.modelConfig.vocabSize;
    ensureRoomFor(engine, countCompletionPrompts(body.prompt), body, 'prompt');
    const prompts = await prepareCompletionPrompts(body.prompt, engine.text, {
      addSpecialTokens: body.add_special_tokens ?? true,
      truncatePromptTokens: body.truncate_prompt_tokens ?? null,
      truncationSide: body.truncation_side ?? null,
      maxModelLen: engine.maxModelLen,
      vocabSize,
    });
    const sent = sentFields(body);
    const logprobs = body.logprobs ?? null;
    const echoOnly = !!body.echo && body.max_tokens === 0;
    const params: SamplingParams[] = [];
    for (const prompt of prompts) {
      await takeTurn();
      const maxTokens = this.maxTokens({
        // The engine needs at least one step to compute prompt logprobs; its token is dropped.
        requested: echoOnly ? 1 : (body.max_tokens ?? null),
        param: 'max_tokens',
        endpointDefault: COMPLETION_DEFAULT_MAX_TOKENS,
        promptLength: prompt.tokenIds.length,
        promptParam: 'prompt',
      });
      const p = buildSamplingParams(body, { ...this.samplingContext(), sent, maxTokens, logprobs, stream: !!body.stream });
      // Echo with logprobs reports the prompt's logprobs too (vLLM sets prompt_logprobs = logprobs).
      if (body.echo && p.prompt_logprobs === null && logprobs !== null) p.prompt_logprobs = logprobs;
      params.push(p);
    }
    const id = this.newResponseId('cmpl', idBase);
    const engineRequests = buildEngineRequests(prompts, params, body, (i) => (prompts.length === 1 ? id : `${id}-${i}`), lora);
    // With a reasoning parser, a constraint waits for the end of the thinking unless the prompt closed it (vLLM).
    for (const [i, request] of engineRequests.entries()) {
      if (request.params.structured_outputs == null) continue;
      const parsing = { choice: { kind: 'none' as const }, functions: [], chatTemplateKwargs: {}, promptText: await this.echoText(prompts[i]) };
      request.structuredOutputsAfter = structuredOutputsAfter(this.opts.parsers ?? NO_PARSERS, parsing, true);
    }
    return { id, model, created: createdNow(), prompts, params, engineRequests, body, echoOnly };
  }

  /**
   * The prompt text (echoed back, read for a closed reasoning section): as sent, or decoded from
   * its token ids (off the HTTP thread when long).
   */
  private async echoText(prompt: PreparedPrompt): Promise<string> {
    if (prompt.text !== null) return prompt.text;
    return (await this.engine.text?.decode(prompt.tokenIds, { skipSpecialTokens: false })) ?? '';
  }

  async complete(prep: PreparedCompletion, signal?: AbortSignal): Promise<CompletionResponse> {
    const results = await drainAll(this.engine, prep.engineRequests, prep.params.map((p) => p.output_kind), signal);
    const { body } = prep;
    const namer = this.tokenNamer(body.return_tokens_as_token_ids);
    const n = prep.params[0].n;
    const choices: CompletionChoice[] = [];
    const usages: UsageInfo[] = [];
    for (const [promptIndex, result] of results.entries()) {
      const prompt = prep.prompts[promptIndex];
      const promptIds = result.promptTokenIds.length > 0 ? result.promptTokenIds : prompt.tokenIds;
      const prefix = body.echo ? await this.echoText(prompt) : '';
      let completionTokens = 0;
      for (const produced of result.choices) {
        await takeTurn();
        const choice = prep.echoOnly ? { ...produced, text: '', tokenIds: [], logprobs: [] } : produced;
        completionTokens += choice.tokenIds.length;
        let logprobs: CompletionLogprobs | null = null;
        if (body.logprobs != null) {
          logprobs = emptyCompletionLogprobs();
          let offset = 0;
          if (body.echo) {
            offset = await appendCompletionLogprobsTakingTurns(logprobs, promptIds, result.promptLogprobs ?? [], body.logprobs, namer, 0);
          }
          await appendCompletionLogprobsTakingTurns(logprobs, choice.tokenIds, choice.logprobs, body.logprobs, namer, offset);
        }
        choices.push({
          index: promptIndex * n + choice.index,
          text: prefix + choice.text,
          logprobs,
          finish_reason: choice.finishReason ?? 'stop',
          stop_reason: choice.stopReason,
          token_ids: body.return_token_ids ? choice.tokenIds : null,
          prompt_logprobs: formatPromptLogprobs(body.prompt_logprobs != null ? result.promptLogprobs : null, namer),
          prompt_token_ids: body.return_token_ids ? promptIds : null,
        });
      }
      usages.push(this.usage(promptIds.length, completionTokens, result.numCachedTokens));
    }
    return {
      id: prep.id,
      object: 'text_completion',
      created: prep.created,
      model: prep.model,
      choices,
      service_tier: null,
      system_fingerprint: null,
      usage: sumUsage(usages, this.opts),
      kv_transfer_params: results.find((r) => r.kvTransferParams)?.kvTransferParams ?? null,
    };
  }

  async *stream(prep: PreparedCompletion, signal?: AbortSignal): AsyncGenerator<CompletionChunk> {
    const { body } = prep;
    const namer = this.tokenNamer(body.return_tokens_as_token_ids);
    const n = prep.params[0].n;
    const { includeUsage, continuousUsage } = streamUsageFlags(body.stream_options, this.opts.enableForceIncludeUsage);
    const states: PromptResult[] = prep.prompts.map(() => ({ promptTokenIds: [], promptLogprobs: null, numCachedTokens: 0, choices: [] }));
    // Per choice (flat index): whether its first chunk went out, and where its text offset stands.
    const started = new Set<number>();
    const offsets = new Map<number, number>();
    const base = { id: prep.id, object: 'text_completion' as const, created: prep.created, model: prep.model };
    const template = new ChunkTemplate(prep.id, 'text_completion' as const, prep.created, prep.model);
    const usageNow = (): UsageInfo =>
      sumUsage(
        states.map((s, i) =>
          this.usage(
            s.promptTokenIds.length || prep.prompts[i].tokenIds.length,
            prep.echoOnly ? 0 : s.choices.reduce((a, c) => a + c.tokenIds.length, 0),
            s.numCachedTokens,
          ),
        ),
        this.opts,
      );
    // Every prompt's engine request listens to the client's signal until it ends.
    if (signal) setMaxListeners(prep.engineRequests.length + 1, signal);
    // The echoed prompt texts (decoded from token ids off the HTTP thread when long), up front
    // so that turning an output into chunks never waits.
    const echoTexts = body.echo ? await Promise.all(prep.prompts.map((p) => this.echoText(p))) : null;
    const chunksOf = (source: number, item: RequestOutput): CompletionChunk[] => {
      // Token counts for usage; logprobs already went out with their chunk.
      foldOutput(states[source], item, prep.params[source].output_kind, false);
      const chunks: CompletionChunk[] = [];
      for (const produced of item.outputs) {
        const out = prep.echoOnly ? { ...produced, text: '', tokenIds: [], logprobs: [] } : produced;
        const index = source * n + out.index;
        let text = out.text;
        let logprobs: CompletionLogprobs | null = null;
        const first = !started.has(index);
        if (body.logprobs != null) logprobs = emptyCompletionLogprobs();
        let offset = offsets.get(index) ?? 0;
        if (first && echoTexts) {
          text = echoTexts[source] + text;
          if (logprobs) offset = appendCompletionLogprobs(logprobs, item.promptTokenIds, item.promptLogprobs ?? [], body.logprobs!, namer, offset);
        }
        if (logprobs) offset = appendCompletionLogprobs(logprobs, out.tokenIds, out.logprobs ?? [], body.logprobs!, namer, offset);
        offsets.set(index, offset);
        if (!text && out.tokenIds.length === 0 && !out.finishReason && !first) continue;
        started.add(index);
        const choice: CompletionChoice = {
          index,
          text,
          logprobs,
          finish_reason: out.finishReason,
          stop_reason: out.stopReason,
        };
        let choiceJson: string | undefined;
        if (body.return_token_ids) {
          choice.token_ids = out.tokenIds;
          if (first) choice.prompt_token_ids = item.promptTokenIds;
        } else {
          choiceJson = plainCompletionChoiceJson(choice);
        }
        chunks.push(template.chunk(choice, choiceJson, continuousUsage ? usageNow() : undefined));
      }
      return chunks;
    };
    if (prep.engineRequests.length === 1) {
      // One prompt (the usual request): its stream straight, without mergeStreams' generator
      // between (docs/perf/sse.md).
      for await (const item of generateFor(this.engine, prep.engineRequests[0], signal)) for (const chunk of chunksOf(0, item)) yield chunk;
    } else {
      const reservation = reserveRoomFor(this.engine, prep.engineRequests);
      try {
        const streams = prep.engineRequests.map((r) => generateFor(this.engine, r, signal, reservation));
        for await (const { source, item } of mergeStreams(streams)) for (const chunk of chunksOf(source, item)) yield chunk;
      } finally {
        reservation.release();
      }
    }
    if (includeUsage) yield { ...base, choices: [], usage: usageNow() };
  }
}
