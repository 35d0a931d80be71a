// POST /pooling: the model's pooled output without an OpenAI shape: an embedding model's vector
// (normalised and truncated as the request says) or a classifier's probabilities, per input.

import { RequestValidationError } from '../../engine/errors';
import type { UsageInfo } from '../usage';
import { checkDimensions } from './embedding-serving';
import { encodeAll } from './encode-all';
import { classProbabilities, embeddingVector, encodeVector, type EmbedDtype, type EncodingFormat, type Endianness } from './pooled-vectors';
import { preparePoolingPrompts, type PoolingInputFields } from './pooling-input';
import { PoolingServingBase, useActivation, type PoolingRequestCommon } from './pooling-serving-base';

export interface PoolingRequestBody extends PoolingInputFields, PoolingRequestCommon {
  task?: string | null;
  encoding_format?: EncodingFormat | null;
  embed_dtype?: EmbedDtype | null;
  endianness?: Endianness | null;
  dimensions?: number | null;
  normalize?: boolean | null;
  use_activation?: boolean | null;
}

export interface PoolingData {
  index: number;
  object: 'pooling';
  data: number[] | string;
}

export interface PoolingResponse {
  id: string;
  object: 'list';
  created: number;
  model: string;
  data: PoolingData[];
  usage: UsageInfo;
}

export class PoolingServing extends PoolingServingBase {
  async create(body: PoolingRequestBody, idBase: string, signal?: AbortSignal): Promise<PoolingResponse> {
    const ctx = this.begin(body, idBase, 'pool', ['embed', 'classify']);
    const task = body.task ?? ctx.pooler.task;
    if (task !== ctx.pooler.task) {
      throw new RequestValidationError(`Task ${task} is not supported, it must be one of the supported tasks: ['${ctx.pooler.task}'].`, 'task');
    }
    const embed = task === 'embed';
    const dimensions = embed ? checkDimensions(body.dimensions ?? ctx.pooler.dimensions, ctx.pooler, ctx.model, this.engine.modelConfig.hiddenSize) : null;
    if (!embed && (body.dimensions != null || body.normalize != null)) {
      const given = [body.dimensions != null ? "'dimensions'" : null, body.normalize != null ? "'normalize'" : null].filter(Boolean).join(', ');
      throw new RequestValidationError(`Task classify only supports ['use_activation'] parameters, does not support [${given}] parameters`, body.dimensions != null ? 'dimensions' : 'normalize');
    }
    const prompts = await preparePoolingPrompts(body, this.engine, {
      trustRequestChatTemplate: this.opts.trustRequestChatTemplate,
      maxTokens: this.engine.maxModelLen,
      tooLong: (n, max) => `This model's maximum context length is ${max} tokens. However, you requested ${n} tokens in the input. Please reduce the length of the input.`,
    });
    const outputs = await encodeAll(this.engine, prompts, { requestId: ctx.id, priority: ctx.priority, signal });
    const encoding = { format: body.encoding_format ?? 'float', dtype: body.embed_dtype ?? 'float32', endianness: body.endianness ?? 'native' } as const;
    const values = (raw: Float32Array): Float32Array =>
      embed
        ? embeddingVector(raw, dimensions, body.normalize ?? body.use_activation ?? ctx.pooler.normalize)
        : Float32Array.from(classProbabilities(raw, ctx.pooler.activation, useActivation(body)));
    return {
      id: ctx.id,
      object: 'list',
      created: ctx.created,
      model: ctx.model,
      data: outputs.map((o, index) => ({ index, object: 'pooling', data: encodeVector(values(o.data), encoding) })),
      usage: this.usage(outputs.reduce((n, o) => n + o.promptTokenIds.length, 0)),
    };
  }
}
