// POST /v1/embeddings (OpenAI's Embeddings API with vLLM's extras): input or chat messages ->
// one pooled, Matryoshka-truncated, normalised vector each, as floats or base64.

import { RequestValidationError } from '../../engine/errors';
import type { PoolerSettings } from '../../model/types';
import type { UsageInfo } from '../usage';
import { encodeAll } from './encode-all';
import { float32Json } from './float-json';
import { embeddingVector, encodeVector, type EmbedDtype, type EncodingFormat, type Endianness } from './pooled-vectors';
import { preparePoolingPrompts, type PoolingInputFields } from './pooling-input';
import { PoolingServingBase, type PoolingRequestCommon } from './pooling-serving-base';

export interface EmbeddingRequestBody extends PoolingInputFields, PoolingRequestCommon {
  encoding_format?: EncodingFormat | null;
  dimensions?: number | null;
  normalize?: boolean | null;
  use_activation?: boolean | null;
  embed_dtype?: EmbedDtype | null;
  endianness?: Endianness | null;
}

export interface EmbeddingData {
  index: number;
  object: 'embedding';
  embedding: number[] | string;
}

export interface EmbeddingResponse {
  id: string;
  object: 'list';
  created: number;
  model: string;
  data: EmbeddingData[];
  usage: UsageInfo;
}

/** An EmbeddingResponse before its vectors are written out: float32 vectors, or base64 text. */
interface EmbeddedVectors {
  head: Pick<EmbeddingResponse, 'id' | 'object' | 'created' | 'model'>;
  vectors: Array<Float32Array | string>;
  usage: UsageInfo;
}

export class EmbeddingServing extends PoolingServingBase {
  async create(body: EmbeddingRequestBody, idBase: string, signal?: AbortSignal): Promise<EmbeddingResponse> {
    const { head, vectors, usage } = await this.embed(body, idBase, signal);
    const data = vectors.map((v, index): EmbeddingData => ({ index, object: 'embedding', embedding: typeof v === 'string' ? v : Array.from(v) }));
    return { ...head, data, usage };
  }

  /**
   * The same response as JSON text, byte for byte JSON.stringify(await create(...)), with the float
   * lists written by float32Json instead of as arrays of numbers: the HTTP route sends this.
   */
  async createJson(body: EmbeddingRequestBody, idBase: string, signal?: AbortSignal): Promise<string> {
    const { head, vectors, usage } = await this.embed(body, idBase, signal);
    const data = vectors.map((v, index) => `{"index":${index},"object":"embedding","embedding":${typeof v === 'string' ? JSON.stringify(v) : float32Json(v)}}`);
    // head's keys, then data and usage: create()'s key order.
    return `${JSON.stringify(head).slice(0, -1)},"data":[${data.join(',')}],"usage":${JSON.stringify(usage)}}`;
  }

  private async embed(body: EmbeddingRequestBody, idBase: string, signal?: AbortSignal): Promise<EmbeddedVectors> {
    const ctx = this.begin(body, idBase, 'embd', ['embed']);
    const dimensions = checkDimensions(body.dimensions ?? ctx.pooler.dimensions, ctx.pooler, ctx.model, this.engine.modelConfig.hiddenSize);
    const normalize = body.normalize ?? body.use_activation ?? ctx.pooler.normalize;
    const chunked = ctx.pooler.enableChunkedProcessing;
    const prompts = await preparePoolingPrompts(body, this.engine, {
      trustRequestChatTemplate: this.opts.trustRequestChatTemplate,
      maxTokens: chunked ? ctx.pooler.maxEmbedLen : this.engine.maxModelLen,
      tooLong: (n, max) =>
        `This model's ${chunked ? 'maximum embedding input length' : 'maximum context length'} is ${max} tokens. ` +
        `However, you requested ${n} tokens in the input for embedding generation. Please reduce the length of the input.`,
    });
    const outputs = await encodeAll(this.engine, prompts, { requestId: ctx.id, priority: ctx.priority, signal, chunkSize: chunked ? this.engine.maxModelLen : null });
    const format = body.encoding_format ?? 'float';
    const encoding = { format, dtype: body.embed_dtype ?? 'float32', endianness: body.endianness ?? 'native' } as const;
    return {
      head: { id: ctx.id, object: 'list', created: ctx.created, model: ctx.model },
      vectors: outputs.map((o) => {
        const v = embeddingVector(o.data, dimensions, normalize);
        return format === 'float' ? v : (encodeVector(v, encoding) as string);
      }),
      usage: this.usage(outputs.reduce((n, o) => n + o.promptTokenIds.length, 0)),
    };
  }
}

/** vLLM's PoolingParams checks of `dimensions`, with its words. */
export function checkDimensions(dimensions: number | null, pooler: PoolerSettings, model: string, hiddenSize: number): number | null {
  if (dimensions === null) return null;
  if (!pooler.matryoshka) {
    throw new RequestValidationError(`Model "${model}" does not support matryoshka representation, changing output dimensions will lead to poor results.`, 'dimensions');
  }
  const allowed = pooler.matryoshkaDimensions;
  if (allowed && !allowed.includes(dimensions)) {
    throw new RequestValidationError(
      `Model "${model}" only supports [${allowed.join(', ')}] matryoshka dimensions, use other output dimensions will lead to poor results.`,
      'dimensions',
    );
  }
  if (dimensions < 1) throw new RequestValidationError('Dimensions must be greater than 0', 'dimensions');
  if (dimensions > hiddenSize) throw new RequestValidationError(`dimensions must be at most the model's ${hiddenSize}.`, 'dimensions');
  return dimensions;
}
