// ModelRunner over an ONNX decoder export (Optimum / transformers.js layout: input_ids,
// attention_mask, optional position_ids / use_cache_branch, past_key_values.{i}.key|value
// [batch, kvHeads, past, headDim] -> logits [batch, seq, vocab], present.{i}.key|value).
//
// The simpler path: the paged cache still lives in the runner, and each step gathers every
// sequence's past into past_key_values tensors and copies the new positions back out of
// present.*. Sequences run one at a time (no padding logic for exports that may or may not
// honour left padding). The exporter fetches the whole present.* (onnxruntime-node copies
// every output), so this costs O(past) copies per step; the built graph avoids that.
import * as ort from 'onnxruntime-node';
import { f16ToF32, f32ToF16 } from '../gguf/half';
import { LoadedModel, ModelArchConfig, ModelRunner, RunnerOptions, StepResult, StepSequence } from '../types';
import { PagedKvCache } from './kv-cache';
import { PagedRunner } from './paged-runner';
import { createFileSession } from './session';

const pastName = (l: number, kind: 'key' | 'value') => `past_key_values.${l}.${kind}`;
const presentName = (l: number, kind: 'key' | 'value') => `present.${l}.${kind}`;

export async function createExportRunner(model: LoadedModel, opts: RunnerOptions): Promise<ModelRunner> {
  if (!model.onnxPath) throw new Error('createExportRunner needs an ONNX export path');
  const session = await createFileSession(model.onnxPath, { device: opts.device, intraOpThreads: opts.intraOpThreads });
  const kvType = checkExportInterface(session, model.config, model.onnxPath);
  if (opts.dtype && opts.dtype !== 'auto' && opts.dtype !== kvType) {
    await session.release();
    throw new Error(`${model.onnxPath}: this ONNX export computes in ${kvType}; --dtype ${opts.dtype} cannot change an export (use --dtype auto)`);
  }
  return new ExportRunner(model.config, new PagedKvCache(model.config, opts.blockSize, opts.numBlocks), session, kvType);
}

/** Checks the export's inputs/outputs against the config; returns the KV element type. */
function checkExportInterface(session: ort.InferenceSession, config: ModelArchConfig, path: string): 'float32' | 'float16' {
  const inputs = new Set(session.inputNames);
  const outputs = new Set(session.outputNames);
  const missing = ['input_ids', 'attention_mask'].filter((n) => !inputs.has(n));
  for (let l = 0; l < config.numLayers; l++) {
    for (const kind of ['key', 'value'] as const) {
      if (!inputs.has(pastName(l, kind))) missing.push(pastName(l, kind));
      if (!outputs.has(presentName(l, kind))) missing.push(presentName(l, kind));
    }
  }
  if (!outputs.has('logits')) missing.push('logits');
  if (missing.length) throw new Error(`${path}: the ONNX export lacks ${missing.join(', ')} (expected the Optimum text-generation-with-past layout for ${config.numLayers} layers)`);
  const known = /^(input_ids|attention_mask|position_ids|use_cache_branch|past_key_values\.\d+\.(key|value))$/;
  const unknown = session.inputNames.filter((n) => !known.test(n));
  if (unknown.length) throw new Error(`${path}: the ONNX export takes inputs this runner does not know how to fill: ${unknown.join(', ')}`);
  const meta = session.inputMetadata.find((m) => m.name === pastName(0, 'key'));
  const type = meta && meta.isTensor ? meta.type : 'float32';
  if (type !== 'float32' && type !== 'float16') throw new Error(`${path}: KV cache inputs of type ${type} are not supported`);
  return type;
}

class ExportRunner extends PagedRunner {
  private readonly inputs: Set<string>;

  constructor(
    config: ModelArchConfig,
    cache: PagedKvCache,
    session: ort.InferenceSession,
    private readonly kvType: 'float32' | 'float16',
  ) {
    super(config, cache, session);
    this.inputs = new Set(session.inputNames);
  }

  protected async runStep(batch: readonly StepSequence[]): Promise<StepResult> {
    const vocab = this.config.vocabSize;
    const logits = new Float32Array(batch.length * vocab);
    const allLogits: (Float32Array | null)[] = [];
    for (let i = 0; i < batch.length; i++) {
      const rows = await this.runOne(batch[i]);
      logits.set(rows.subarray(rows.length - vocab), i * vocab);
      allLogits.push(batch[i].allLogits ? rows : null);
    }
    return { logits, allLogits };
  }

  /** Logits of every new position of one sequence ([tokens * vocab]). */
  private async runOne(seq: StepSequence): Promise<Float32Array> {
    const n = seq.tokens.length;
    const past = seq.positionOffset;
    if (n < 1) throw new Error('a step sequence needs at least one token');
    const pastSlots = Array.from({ length: past }, (_, p) => this.cache.slot(seq.blockTable, p));
    const newSlots = Array.from({ length: n }, (_, i) => this.cache.slot(seq.blockTable, past + i));
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(seq.tokens.map(BigInt)), [1, n]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(past + n).fill(1n), [1, past + n]),
    };
    if (this.inputs.has('position_ids')) {
      feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(past + i)), [1, n]);
    }
    if (this.inputs.has('use_cache_branch')) feeds.use_cache_branch = new ort.Tensor('bool', new Uint8Array([past > 0 ? 1 : 0]), [1]);
    for (let l = 0; l < this.config.numLayers; l++) {
      feeds[pastName(l, 'key')] = this.pastTensor(this.cache.keys[l], pastSlots);
      feeds[pastName(l, 'value')] = this.pastTensor(this.cache.values[l], pastSlots);
    }
    const out = await this.session.run(feeds);
    for (let l = 0; l < this.config.numLayers; l++) {
      this.storePresent(out[presentName(l, 'key')], this.cache.keys[l], past, newSlots);
      this.storePresent(out[presentName(l, 'value')], this.cache.values[l], past, newSlots);
    }
    const logits = out.logits;
    const data = logits.type === 'float16' ? halfToF32(logits.data as Uint16Array) : (logits.data as Float32Array);
    if (data.length !== n * this.config.vocabSize) {
      throw new Error(`the ONNX export returned logits of shape [${logits.dims.join(', ')}], expected [1, ${n}, ${this.config.vocabSize}]`);
    }
    return data;
  }

  /** [1, kvHeads, past, headDim] from the cache rows of the given slots. */
  private pastTensor(cache: Float32Array, slots: number[]): ort.Tensor {
    const { numKvHeads: heads, headDim: hd } = this.config;
    const row = this.cache.rowSize;
    const out = new Float32Array(heads * slots.length * hd);
    for (let h = 0; h < heads; h++) {
      slots.forEach((slot, p) => out.set(cache.subarray(slot * row + h * hd, slot * row + (h + 1) * hd), (h * slots.length + p) * hd));
    }
    const dims = [1, heads, slots.length, hd];
    return this.kvType === 'float16' ? new ort.Tensor('float16', f32ToHalf(out), dims) : new ort.Tensor('float32', out, dims);
  }

  /** Copies positions past.. of present [1, kvHeads, total, headDim] into the cache slots. */
  private storePresent(present: ort.Tensor, cache: Float32Array, past: number, slots: number[]): void {
    const { numKvHeads: heads, headDim: hd } = this.config;
    const total = present.dims[2];
    const data = present.type === 'float16' ? halfToF32(present.data as Uint16Array) : (present.data as Float32Array);
    const row = this.cache.rowSize;
    for (let h = 0; h < heads; h++) {
      slots.forEach((slot, i) => {
        const src = (h * total + past + i) * hd;
        cache.set(data.subarray(src, src + hd), slot * row + h * hd);
      });
    }
  }
}

function halfToF32(data: Uint16Array): Float32Array {
  return Float32Array.from(data, (h) => f16ToF32(h));
}

function f32ToHalf(data: Float32Array): Uint16Array {
  return Uint16Array.from(data, (v) => f32ToF16(v));
}
