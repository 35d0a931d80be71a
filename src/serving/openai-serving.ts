// The base every generation endpoint's serving class extends (completions, chat, responses), as
// vLLM's OpenAIServing: the model check, the checks every request shares, the response-id rule,
// token naming, max_tokens against the context and usage. Each subclass holds only its shape.

import type { EngineClient } from '../engine/types';
import { responseId, type ResponseIdPrefix } from './ids';
import { tokenNamer, type TokenNamer } from './logprobs';
import { resolveMaxTokens, type MaxTokensInput } from './max-tokens';
import type { SamplingContext } from './sampling-params';
import { checkRequestExtras, resolveModelName, type RequestExtras, type ServingOptions } from './serving-options';
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

  /** Refused fields and vLLM's request-level extras (cache_salt, priority, vllm_xargs). */
  protected checkCommonFields(body: RequestExtras & Record<string, unknown>, checks: CommonRequestChecks): void {
    rejectUnsupportedFields(body, checks.unsupported);
    checkRequestExtras(body, this.opts, checks.allowListXargs);
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
}
