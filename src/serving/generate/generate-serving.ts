// /inference/v1/generate: validates a GenerateRequest against the server's flags, hands the
// prompt token ids and the engine SamplingParams to the engine, and shapes the output
// (generate-output.ts). Errors are thrown before the engine sees the request, so a bad request
// never reaches the batch.

import type { ServerConfig } from '../../config/server-config';
import { RequestValidationError } from '../../engine/errors';
import { nowMs } from '../../engine/clock';
import { normalizeSamplingParams, validateSamplingParams } from '../../engine/sampling-params';
import { OUTPUT_KIND, type EngineClient, type EngineRequest, type SamplingParams } from '../../engine/types';
import { NO_PARSERS } from '../chat-output';
import { checkTokenIdsInVocab } from '../completion-prompts';
import { tokenNamer } from '../logprobs';
import { resolveMaxTokens } from '../max-tokens';
import { OpenAIHttpError } from '../openai-error';
import type { ServedModels } from '../lora/served-models';
import { checkPriority, resolveModel, servingOptionsFrom, type ServingOptions } from '../serving-options';
import { streamUsageFlags } from '../usage';
import { collectGenerateResponse, GenerateJob, generateStreamChunks } from './generate-output';
import type { GenerateRequest, GenerateResponse, GenerateStreamResponse, OutputMode } from './generate-types';

/** Beyond the shared serving flags: a tokens-only server refuses stop strings; n is checked against --max-num-seqs. */
export interface GenerateServingOptions extends ServingOptions {
  tokensOnly: boolean;
  maxNumSeqs: number;
}

export function generateServingOptions(config: ServerConfig, models?: ServedModels, engine?: Pick<EngineClient, 'vision'>): GenerateServingOptions {
  return { ...servingOptionsFrom(config, models, engine), tokensOnly: config.tokensOnly, maxNumSeqs: config.maxNumSeqs };
}

/** The engine request id is this + the X-Request-Id header, else the body request_id, else a uuid. */
const GENERATE_REQUEST_ID_PREFIX = 'generate-tokens-';

export interface PreparedGenerate {
  job: GenerateJob;
  engineRequest: EngineRequest;
  stream: boolean;
}

export class GenerateServing {
  constructor(
    private readonly engine: EngineClient,
    private readonly opts: GenerateServingOptions,
  ) {}

  /** prepare(), once the adapter `model` names is loaded where a LoRA resolver has it (first use). */
  async resolveAndPrepare(body: GenerateRequest, idBase: string): Promise<PreparedGenerate> {
    await this.opts.models?.loadOnFirstUse(body.model);
    return this.prepare(body, idBase);
  }

  /**
   * Validates and builds the engine request; throws the 400/404 vLLM answers with.
   * `idBase`: the X-Request-Id header, else the body request_id, else a random id (responseIdBase).
   */
  prepare(body: GenerateRequest, idBase: string): PreparedGenerate {
    const { name: model, lora } = resolveModel(body.model, this.opts);
    if (body.features != null || (body.content_parts != null && body.content_parts.length > 0)) {
      throw OpenAIHttpError.badRequest('Multimodal inputs are not supported by this server.', body.features != null ? 'features' : 'content_parts');
    }
    const outputMode: OutputMode = body.output_mode ?? 'tokens';
    if (outputMode === 'text' && !this.engine.tokenizer) {
      throw OpenAIHttpError.badRequest(
        "output_mode='text' needs a tokenizer, but this server was started without one (--tokens-only or --skip-tokenizer-init).",
        'output_mode',
      );
    }
    checkTokenIdsInVocab(body.token_ids, this.engine.modelConfig.vocabSize, 'token_ids');
    const priority = checkPriority(body.priority, this.opts.schedulingPolicy);
    const params = this.samplingParams(body, outputMode);
    const requestId = GENERATE_REQUEST_ID_PREFIX + idBase;
    const stream = body.stream === true;
    const { includeUsage, continuousUsage } = streamUsageFlags(body.stream_options, this.opts.enableForceIncludeUsage);
    const job: GenerateJob = {
      requestId,
      model,
      outputMode,
      params,
      returnTokenIds: body.return_token_ids === true,
      ecTransferParams: body.ec_transfer_params ?? null,
      includeUsage: stream && includeUsage,
      continuousUsage: stream && continuousUsage,
      enablePromptTokensDetails: this.opts.enablePromptTokensDetails,
      namer: tokenNamer(this.engine.tokenizer, this.opts.returnTokensAsTokenIds),
    };
    const engineRequest: EngineRequest = {
      requestId,
      promptTokenIds: body.token_ids,
      params,
      priority,
      cacheSalt: body.cache_salt ?? null,
      kvTransferParams: body.kv_transfer_params ?? null,
      arrivalTime: nowMs(),
      structuredOutputsAfter: this.structuredOutputsAfter(body, params),
      lora,
    };
    return { job, engineRequest, stream };
  }

  /**
   * vLLM's reasoning_ended with --reasoning-parser: true constrains from the first token, false
   * waits for the end of the reasoning, null (absent) asks the reasoning parser about the prompt.
   */
  private structuredOutputsAfter(body: GenerateRequest, params: SamplingParams): string | null {
    const Reasoning = (this.opts.parsers ?? NO_PARSERS).reasoning;
    if (!Reasoning || params.structured_outputs == null || body.reasoning_ended === true) return null;
    const kwargs = body.reasoning_parser_kwargs?.chat_template_kwargs;
    const parser = new Reasoning({ chatTemplateKwargs: kwargs && typeof kwargs === 'object' ? (kwargs as Record<string, unknown>) : {} });
    const tokenizer = this.engine.tokenizer;
    if (body.reasoning_ended == null && tokenizer && parser.isReasoningEnd(tokenizer.decode(body.token_ids, { skipSpecialTokens: false }))) return null;
    return parser.reasoningEndMarker ?? null;
  }

  /** Non-streaming: drains the engine and returns the full body. */
  complete(prepared: PreparedGenerate, signal?: AbortSignal): Promise<GenerateResponse> {
    return collectGenerateResponse(prepared.job, this.engine.generate(prepared.engineRequest, signal));
  }

  /** Streaming: the chunks to send as SSE frames (the caller adds `data: [DONE]`). */
  stream(prepared: PreparedGenerate, signal?: AbortSignal): AsyncIterable<GenerateStreamResponse> {
    return generateStreamChunks(prepared.job, this.engine.generate(prepared.engineRequest, signal));
  }

  /** `sampling_params` is vLLM's engine struct: defaults, normalisation and range checks as the engine does them. */
  private samplingParams(body: GenerateRequest, outputMode: OutputMode): SamplingParams {
    const raw = body.sampling_params;
    const params = normalizeSamplingParams(raw);
    if (outputMode === 'text' && !params.detokenize) {
      throw new RequestValidationError(
        "output_mode='text' requires sampling_params.detokenize to be true",
        'sampling_params.detokenize',
      );
    }
    if (this.opts.tokensOnly) {
      // Stop strings need a detokenizer; a tokens-only server refuses them instead of ignoring them.
      if (params.stop.length > 0) {
        throw new RequestValidationError(
          'sampling_params.stop is not supported on a --tokens-only server (no tokenizer); use stop_token_ids instead.',
          'sampling_params.stop',
        );
      }
      params.detokenize = false;
    }
    if (!this.engine.tokenizer && params.bad_words.length > 0) {
      // bad_words are strings the engine must tokenize.
      throw new RequestValidationError('sampling_params.bad_words needs a tokenizer; this server runs without one.', 'sampling_params.bad_words');
    }
    // Sent: checked against the context; not sent: up to the context limit (or generation_config's
    // max_new_tokens), not the struct's 16.
    const sent = raw.max_tokens != null ? raw.max_tokens : null;
    params.max_tokens = resolveMaxTokens({
      requested: sent,
      param: 'max_tokens',
      endpointDefault: null,
      generationConfigMax: sent === null ? this.engine.generationDefaults.max_new_tokens : null,
      promptLength: body.token_ids.length,
      maxModelLen: this.engine.maxModelLen,
      promptParam: 'token_ids',
    });
    // After max_tokens is resolved: min_tokens is checked against the real budget, not the struct's 16.
    validateSamplingParams(params, {
      vocabSize: this.engine.modelConfig.vocabSize,
      maxNumSeqs: this.opts.maxNumSeqs,
      maxLogprobs: this.opts.maxLogprobs,
    });
    params.output_kind = body.stream === true ? OUTPUT_KIND.DELTA : OUTPUT_KIND.FINAL_ONLY;
    return params;
  }
}
