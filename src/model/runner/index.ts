// Entry point of the model runner: picks the runner for what the model returns (model.output):
// for logits, built graphs run segmented around the native paged-attention kernel when the addon
// is available (segmented-runner.ts), else as one graph with attention inside (graph-runner.ts),
// and ONNX exports through export-runner.ts; the encoder-decoder runner serves transcription
// (the architecture's encoderDecoder graphs).
import { LoadedModel, ModelRunner, RunnerOptions } from '../types';
import { createExportRunner } from './export-runner';
import { createGraphRunner } from './graph-runner';
import { nativeAttention, nativeAttentionUnavailable } from './native-attention';
import { canRunSegmented, createSegmentedRunner } from './segmented-runner';
import { createWhisperRunner } from './whisper-runner';

export { kvBytesPerBlock } from './kv-cache';

export async function createRunner(model: LoadedModel, opts: RunnerOptions): Promise<ModelRunner> {
  const float32Kv = (opts.kvCacheDtype ?? 'float32') === 'float32';
  if (model.weights && model.output.kind === 'transcription') {
    if (!float32Kv) throw new Error(`--kv-cache-dtype ${opts.kvCacheDtype} applies to decoder-only models; the encoder-decoder runner stores float32`);
    return createWhisperRunner(model, opts);
  }
  if (model.weights) {
    const native = opts.attention === 'graph' || !canRunSegmented(model) ? null : nativeAttention();
    if (native) return createSegmentedRunner(model, opts, native);
    if (opts.attention === 'native') {
      const c = model.config;
      throw new Error(
        `native attention is not available: ${canRunSegmented(model) ? nativeAttentionUnavailable() : `${c.architecture} with head size ${c.headDim} and ${c.numHeads}/${c.numKvHeads} heads has no segmented graphs within the kernel's limits`}`,
      );
    }
    if (!float32Kv) throw new Error(`--kv-cache-dtype ${opts.kvCacheDtype} needs the native attention kernel, which is not available: ${nativeAttentionUnavailable()}`);
    return createGraphRunner(model, opts);
  }
  if (!float32Kv) throw new Error(`an ONNX export keeps its own KV cache type; --kv-cache-dtype ${opts.kvCacheDtype} applies to GGUF and safetensors models`);
  if (model.onnxPath) return createExportRunner(model, opts);
  throw new Error(`model ${model.source}: no weights to build a graph from, and no ONNX file`);
}
