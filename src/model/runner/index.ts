// Entry point of the model runner. Built graphs run segmented around the native paged-attention
// kernel when the addon is available (segmented-runner.ts), else as one graph with attention
// inside (graph-runner.ts); ONNX exports run through export-runner.ts.
import { LoadedModel, ModelRunner, RunnerOptions } from '../types';
import { createExportRunner } from './export-runner';
import { createGraphRunner } from './graph-runner';
import { nativeAttention, nativeAttentionUnavailable } from './native-attention';
import { canRunSegmented, createSegmentedRunner } from './segmented-runner';

export { kvBytesPerBlock } from './kv-cache';

export async function createRunner(model: LoadedModel, opts: RunnerOptions): Promise<ModelRunner> {
  if (model.weights) {
    const native = opts.attention === 'graph' || !canRunSegmented(model) ? null : nativeAttention();
    if (native) return createSegmentedRunner(model, opts, native);
    if (opts.attention === 'native') {
      throw new Error(`native attention is not available: ${canRunSegmented(model) ? nativeAttentionUnavailable() : `${model.config.architecture} with head size ${model.config.headDim} and ${model.config.numHeads}/${model.config.numKvHeads} heads has no segmented graphs within the kernel's limits`}`);
    }
    if ((opts.kvCacheDtype ?? 'float32') !== 'float32') {
      throw new Error(`--kv-cache-dtype ${opts.kvCacheDtype} needs the native attention kernel, which is not available: ${nativeAttentionUnavailable()}`);
    }
    return createGraphRunner(model, opts);
  }
  if ((opts.kvCacheDtype ?? 'float32') !== 'float32') throw new Error(`an ONNX export keeps its own KV cache type; --kv-cache-dtype ${opts.kvCacheDtype} applies to GGUF and safetensors models`);
  if (model.onnxPath) return createExportRunner(model, opts);
  throw new Error(`model ${model.source}: no weights to build a graph from, and no ONNX file`);
}
