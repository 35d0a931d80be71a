// The base every generation endpoint's serving class extends (completions, chat, responses), as
// vLLM's OpenAIServing: the model check, the checks every request shares, the response-id rule,
// token naming, max_tokens against the context and usage, and the tool-calling and reasoning
// steps chat and responses share. Each subclass holds only its shape.

import type { EngineClient, EngineRequest, MultiModalInput, SamplingParams } from '../engine/types';
import {
  countReasoningTokens, createChatOutputParser, NO_PARSERS, structuredOutputsAfter, type ChatOutputParser, type ChoiceParsing, type OutputParserFactories,
} from './chat-output';
import { responseId, type ResponseIdPrefix } from './ids';
import { tokenNamer, type TokenNamer } from './logprobs';
import { MultiModalItems, type MediaRequestFields } from './media/multimodal-items';
import { placeImages } from './media/image-prompt';
import { resolveMaxTokens, type MaxTokensInput } from './max-tokens';
import type { SamplingContext } from './sampling-params';
import type { ResolvedModel } from './lora/served-models';
import { checkRequestExtras, resolveModelName, resolveModelOnFirstUse, type RequestExtras, type ServingOptions } from './serving-options';
import type { StructuredOutputsRequestFields } from './structured-outputs';
import { namingToolConstraintErrors, withToolConstraint } from './tool-call-schema';
import type { RequestTools } from './tool-choice';
import { rejectUnsupportedFields } from './unsupported';
import { buildUsage, type UsageInfo } from './usage';

/** What a request must look like to every endpoint: the served model and vLLM's extras. */
export interface CommonRequestChecks {
  /** Fields this endpoint refuses with 400 (features not built yet). */
  unsupported: readonly string[];
  /** Whether vllm_xargs values may be lists (chat and responses) or only scalars (completions). */
  allowListXargs: boolean;
}

export abstract class OpenAIServing {
  constructor(
    protected readonly engine: EngineClient,
    protected readonly opts: ServingOptions,
  ) {}

  /** The model name responses report; 404 with vLLM's message when `model` is not served. */
  protected checkModel(model: string | null | undefined): string {
    return resolveModelName(model, this.opts);
  }

  /** The name responses report and the LoRA adapter `model` names (null: the base model, loaded on first use by a resolver); 404 when not served. */
  protected resolveModel(model: string | null | undefined): Promise<ResolvedModel> {
    return resolveModelOnFirstUse(model, this.opts);
  }

  /** Refused fields and vLLM's request-level extras (cache_salt, priority, vllm_xargs). */
  protected checkCommonFields(body: RequestExtras & Record<string, unknown>, checks: CommonRequestChecks): void {
    rejectUnsupportedFields(body, checks.unsupported);
    checkRequestExtras(body, this.opts, checks.allowListXargs);
  }

  /** A fresh tracker of one prompt's media parts; none where the server was built without media options (image parts are then refused). */
  protected multiModalItems(body: MediaRequestFields): MultiModalItems | undefined {
    return this.opts.media ? new MultiModalItems(this.opts.media, body) : undefined;
  }

  /**
   * A vision model's prompts after tokenizing (`hashes` from startImageHashes): each image's
   * placeholder expanded to its run of image tokens and its placement set. The prompts' token ids
   * change, so the length checks and usage that follow count image tokens, as vLLM's do.
   */
  protected async placeImages(prompts: { tokenIds: number[] }[], inputs: readonly (MultiModalInput | null)[], hashes: readonly (Promise<string[]> | null)[], param = 'messages'): Promise<void> {
    const vision = this.engine.vision;
    for (let i = 0; i < prompts.length; i++) {
      const input = inputs[i];
      if (!input) continue;
      if (!vision) throw new Error('image inputs reached a model without an image side');
      await placeImages(prompts[i], input, vision, hashes[i]!, param);
    }
  }

  /** The response id from the request's id base (requestIdBase: X-Request-Id, request_id, random): `cmpl-…`, `chatcmpl-…`, `resp_…`. */
  protected newResponseId(prefix: ResponseIdPrefix, idBase: string): string {
    return responseId(prefix, idBase);
  }

  /** How logprob tokens are shown: text, or "token_id:N" (flag or per request). */
  protected tokenNamer(returnTokensAsTokenIds: boolean | null | undefined): TokenNamer {
    return tokenNamer(this.engine.tokenizer, this.opts.returnTokensAsTokenIds || !!returnTokensAsTokenIds);
  }

  /** max_tokens resolved against the prompt, --max-model-len and generation_config.json. */
  protected maxTokens(input: Omit<MaxTokensInput, 'generationConfigMax' | 'maxModelLen'>): number {
    return resolveMaxTokens({
      ...input,
      generationConfigMax: this.engine.generationDefaults.max_new_tokens,
      maxModelLen: this.engine.maxModelLen,
    });
  }

  /** The model- and flag-given part of buildSamplingParams' context. */
  protected samplingContext(): Pick<SamplingContext, 'generationDefaults' | 'vocabSize' | 'maxNumSeqs' | 'maxLogprobs' | 'detokenize'> {
    return {
      generationDefaults: this.engine.generationDefaults,
      vocabSize: this.engine.modelConfig.vocabSize,
      maxNumSeqs: this.engine.maxNumSeqs,
      maxLogprobs: this.opts.maxLogprobs,
      detokenize: this.engine.tokenizer !== null,
    };
  }

  protected usage(promptTokens: number, completionTokens: number, cachedTokens: number): UsageInfo {
    return buildUsage(promptTokens, completionTokens, cachedTokens, this.opts);
  }

  /** The parser classes --tool-call-parser / --reasoning-parser name. */
  protected get parsers(): OutputParserFactories {
    return this.opts.parsers ?? NO_PARSERS;
  }

  /**
   * Sampling parameters of a request that may call tools: a forced tool_choice becomes a
   * structured-outputs constraint (its errors name `tools`), and "auto" keeps special tokens when
   * the parser's markers may be special tokens the detokenizer would drop (vLLM does the same);
   * formats built of special tokens (harmony) also get them back to back, with no spaces added.
   */
  protected toolSamplingParams<T extends StructuredOutputsRequestFields & { parallel_tool_calls?: boolean | null }>(
    fields: T,
    tools: RequestTools,
    build: (fields: T) => SamplingParams,
  ): SamplingParams {
    const constrained = withToolConstraint(fields, tools);
    const params = namingToolConstraintErrors(constrained !== fields, () => build(constrained));
    if (tools.choice.kind === 'auto' && this.parsers.tool?.keepsSpecialTokens) params.skip_special_tokens = false;
    if (this.parsers.reasoning?.verbatimSpecialTokens || (tools.choice.kind === 'auto' && this.parsers.tool?.verbatimSpecialTokens)) {
      params.skip_special_tokens = false;
      params.spaces_between_special_tokens = false;
    }
    return params;
  }

  /** With a reasoning parser, a request's constraint starts once the thinking is over (vLLM's reasoning_ended). */
  protected constrainAfterReasoning(request: EngineRequest, parsing: ChoiceParsing, includeReasoning: boolean): void {
    if (request.params.structured_outputs == null) return;
    request.structuredOutputsAfter = structuredOutputsAfter(this.parsers, parsing, includeReasoning);
  }

  /** A fresh output parser for one choice (reasoning first, then tool calls); null when its text is plain content. */
  protected outputParser(parsing: ChoiceParsing): ChatOutputParser | null {
    return createChatOutputParser(this.parsers, parsing);
  }

  /** How many output tokens it took to get past the reasoning section, which ends at `reasoningEnd` in the text. */
  protected reasoningTokens(tokenIds: readonly number[], reasoningEnd: number, skipSpecialTokens: boolean): number {
    const tokenizer = this.engine.tokenizer;
    return tokenizer ? countReasoningTokens(tokenizer, tokenIds, reasoningEnd, skipSpecialTokens) : 0;
  }
}
