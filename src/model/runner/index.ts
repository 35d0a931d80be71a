// Entry point of the model runner: creates the runner backends/choose-backend.ts picks for the
// model: built graphs segmented around the native paged-attention kernel when the addon is
// available (segmented-runner.ts, its layers run by a backend), else as one graph with attention
// inside (graph-runner.ts); ONNX exports through export-runner.ts; the encoder-decoder runner
// serves transcription (the architecture's encoderDecoder graphs).
import { LoadedModel, ModelRunner, RunnerOptions } from '../types';
import { FP8_KV_DTYPE, type KvCacheDtypeFlag, type KvStorageDtype } from './kv-dtype';
import { kvLayerGroups, singleKvGroup, type KvLayerGroup } from './kv-pools';
import { createExportRunner } from './export-runner';
import { createGraphRunner } from './graph-runner';
import { canRunSegmented, chooseRunner, type RunnerChoice } from './backends/choose-backend';
import { nativeKernelsUnavailable } from './native-kernels';
import { createSegmentedRunner } from './segmented-runner';
import { createWhisperRunner } from './whisper-runner';

export { kvBytesPerBlock } from './kv-cache';

/**
 * How the KV cache's layers are pooled for `model`: sliding-window layers apart (kv-pools.ts) where
 * the segmented runner runs it (the one runner whose kernel reads per-pool tables); else one pool.
 */
export function kvPoolGroups(model: LoadedModel, attention?: RunnerOptions['attention']): KvLayerGroup[] {
  return chooseRunner(model, attention).kind === 'segmented' ? kvLayerGroups(model.config) : singleKvGroup(model.config);
}

/**
 * What the paged KV cache stores for `flag`: a named type as is, 'fp8' as fp8_e4m3; 'auto' the model's data type
 * (LoadedModel.kvCacheAutoDtype: config.json's dtype, float16 for GGUF), or float32 — logged once
 * with the reason — where the runner this model gets reads only float32.
 */
export function resolveKvCacheDtype(model: LoadedModel, flag: KvCacheDtypeFlag, attention?: RunnerOptions['attention'], log: (line: string) => void = console.info): KvStorageDtype {
  if (flag === 'fp8') return FP8_KV_DTYPE;
  if (flag !== 'auto') return flag;
  const wanted = model.kvCacheAutoDtype ?? 'float32';
  if (wanted === 'float32') return wanted;
  const choice = chooseRunner(model, attention);
  if (choice.kind === 'segmented') return wanted;
  log(`[engine] --kv-cache-dtype auto: the KV cache stores float32, not the model's ${wanted}: ${choice.float32Only}`);
  return 'float32';
}

export async function createRunner(model: LoadedModel, opts: RunnerOptions): Promise<ModelRunner> {
  const float32Kv = (opts.kvCacheDtype ?? 'float32') === 'float32';
  const choice = chooseRunner(model, opts.attention);
  if (opts.lora && choice.kind !== 'segmented') throw new Error(`LoRA adapters run only on the segmented runner, whose backends add them per row; this model gets the ${choice.kind} runner (${loraRefusal(choice)})`);
  switch (choice.kind) {
    case 'segmented':
      return createSegmentedRunner(model, opts, choice.native);
    case 'whisper':
      if (!float32Kv) throw new Error(`--kv-cache-dtype ${opts.kvCacheDtype} applies to decoder-only models; the encoder-decoder runner stores float32`);
      return createWhisperRunner(model, opts);
    case 'graph':
      if (opts.attention === 'native') {
        const c = model.config;
        throw new Error(
          `native attention is not available: ${canRunSegmented(model) ? nativeKernelsUnavailable() : `${c.architecture} with head size ${c.headDim} and ${c.numHeads}/${c.numKvHeads} heads has no segmented graphs within the kernel's limits`}`,
        );
      }
      if (!float32Kv) throw new Error(`--kv-cache-dtype ${opts.kvCacheDtype} needs the native attention kernel, which is not available: ${nativeKernelsUnavailable()}`);
      return createGraphRunner(model, opts);
    case 'export':
      if (!float32Kv) throw new Error(`an ONNX export keeps its own KV cache type; --kv-cache-dtype ${opts.kvCacheDtype} applies to GGUF and safetensors models`);
      if (model.onnxPath) return createExportRunner(model, opts);
      throw new Error(`model ${model.source}: no weights to build a graph from, and no ONNX file`);
  }
}

/** Why a runner other than the segmented one cannot run LoRA adapters. */
function loraRefusal(choice: Exclude<RunnerChoice, { kind: 'segmented' }>): string {
  switch (choice.kind) {
    case 'export':
      return "an ONNX export's linears are inside its own graph";
    case 'whisper':
      return 'the encoder-decoder runner has no adapted linears';
    case 'graph':
      return `its linears and attention are one graph: ${choice.float32Only}`;
  }
}
