// What every pooling route shares (vLLM's OpenAIServing for pooling): the model-name check, the
// request-level extras, the response id, the model's pooler settings and usage.

import { RequestValidationError } from '../../engine/errors';
import type { EngineClient } from '../../engine/types';
import type { PoolerSettings, PoolingTask } from '../../model/types';
import { createdNow } from '../ids';
import { checkRequestExtras, resolveBaseModelName, type RequestExtras, type ServingOptions } from '../serving-options';
import { rejectUnsupportedFields } from '../unsupported';
import { buildUsage, type UsageInfo } from '../usage';

export interface PoolingRequestCommon extends RequestExtras {
  model?: string | null;
  user?: string | null;
  mm_processor_kwargs?: unknown;
  [key: string]: unknown;
}

/** What a handler knows once the common checks passed. */
export interface PoolingRequestContext {
  model: string;
  /** Response id, `<prefix>-<X-Request-Id | request_id | random>`. */
  id: string;
  created: number;
  priority: number;
  pooler: PoolerSettings;
}

export abstract class PoolingServingBase {
  constructor(
    protected readonly engine: EngineClient,
    protected readonly opts: ServingOptions,
  ) {}

  protected begin(body: PoolingRequestCommon, idBase: string, prefix: string, tasks: readonly PoolingTask[]): PoolingRequestContext {
    const model = resolveBaseModelName(body.model, this.opts, 'pooling API');
    rejectUnsupportedFields(body, ['mm_processor_kwargs']);
    checkRequestExtras(body, this.opts, false);
    const pooler = this.engine.pooler;
    if (!pooler || !tasks.includes(pooler.task)) {
      throw new RequestValidationError(`The model \`${model}\` does not support this API (it serves ${pooler ? pooler.task : 'generation'}).`, 'model');
    }
    return { model, id: `${prefix}-${idBase}`, created: createdNow(), priority: body.priority ?? 0, pooler };
  }

  /** Usage of a pooling request: prompt tokens only. */
  protected usage(promptTokens: number): UsageInfo {
    return buildUsage(promptTokens, 0, 0, this.opts);
  }
}

/** vLLM's legacy spellings of use_activation (`activation`, `softmax`) are read too; default on. */
export function useActivation(body: { use_activation?: boolean | null; activation?: boolean | null; softmax?: boolean | null }): boolean {
  return body.use_activation ?? body.activation ?? body.softmax ?? true;
}
