// The one place that decides how a model's forward pass runs. chooseRunner picks the runner
// (segmented around the native attention kernel, one graph with attention inside, an ONNX
// export's, the encoder-decoder one); for the segmented runner, chooseDecoderBackend picks what
// runs the layers, with the reason logged at start-up. A new backend is its file plus a rule here.
import { architectureOf, graphDtypeFor } from '../../architectures/registry';
import { hasLayerRope } from '../../graph/layer-options';
import { hasMoeLayers } from '../../moe/moe-config';
import type { DecoderArchConfig, LoadedModel, ModelWeights, RunnerOptions } from '../../types';
import { nativeKernels, nativeKernelsUnavailable, type NativeKernels } from '../native-kernels';
import type { BackendContext, DecoderBackend } from './decoder-backend';
import { linearNames } from './llama-weight-names';
import { createNativeF32, f32Addon, type F32Addon } from './native-f32';
import { createNativeQ8 } from './native-q8';
import { createOnnxSegments } from './onnx-segments';
import { allLinearsQ8 } from './q8-weights';

/** The native attention kernel's limits (native/src/attention.cc: kMaxHeadDim, kMaxQueries). */
const MAX_HEAD_DIM = 256;
const MAX_GROUP = 32;

/** True when the model's architecture can run segmented (causalLmSegments) within the kernel's limits. */
export function canRunSegmented(model: LoadedModel): boolean {
  const c = model.config;
  return (
    model.weights !== null &&
    architectureOf(c).graphs.causalLmSegments !== undefined &&
    c.headDim <= MAX_HEAD_DIM &&
    c.numHeads % c.numKvHeads === 0 &&
    c.numHeads / c.numKvHeads <= MAX_GROUP
  );
}

/**
 * Which runner `model` gets with `attention`, and for those that store only a float32 KV cache
 * (16-bit storage is read by the native attention kernel alone), why.
 */
export type RunnerChoice =
  | { kind: 'segmented'; native: NativeKernels }
  | { kind: 'whisper' | 'graph' | 'export'; float32Only: string };

export function chooseRunner(model: LoadedModel, attention: RunnerOptions['attention']): RunnerChoice {
  if (!model.weights) return { kind: 'export', float32Only: 'an ONNX export keeps its own KV cache type' };
  if (model.output.kind === 'transcription') return { kind: 'whisper', float32Only: 'the encoder-decoder runner stores float32' };
  if (attention === 'graph') return { kind: 'graph', float32Only: 'attention runs inside the graph' };
  if (!canRunSegmented(model)) return { kind: 'graph', float32Only: `${model.config.architecture} has no segmented graphs within the native attention kernel's limits` };
  const native = nativeKernels();
  if (native) return { kind: 'segmented', native };
  return { kind: 'graph', float32Only: `the native attention addon is not available (${nativeKernelsUnavailable()})` };
}

/** The widest hidden size native-f32 takes on AVX-512 CPUs: docs/perf/small-decoder.md's table. */
export const SMALL_DECODER_MAX_HIDDEN = 128;

/** The widest hidden size native-f32 takes on AVX2 + FMA CPUs (Zen 1 measured): docs/perf/small-decoder.md's AVX2 table. */
export const SMALL_DECODER_MAX_HIDDEN_AVX2 = 128;

/** The widest hidden size native-f32 takes with the addon's kernels (0: none, the portable loops never pay): docs/perf/small-decoder.md's tables. */
export function smallDecoderMaxHidden(addon: F32Addon | null): number {
  if (addon?.simd === 'avx512') return SMALL_DECODER_MAX_HIDDEN;
  if (addon?.simd === 'avx2') return SMALL_DECODER_MAX_HIDDEN_AVX2;
  return 0;
}

/** What the chooser reads of the runner's options. */
export type BackendOptions = Pick<RunnerOptions, 'device' | 'dtype' | 'nativeQ8Gemm' | 'smallDecoder'> & { keepQuantized?: boolean };

/** The backends, as the start-up log and SegmentedRunner.backendName name them. */
export type BackendName = 'onnx-segments' | 'native-q8' | 'native-f32';

export interface BackendChoice {
  name: BackendName;
  /** Why this backend, and why not the ones before it (the start-up log line). */
  reason: string;
  create(ctx: BackendContext): DecoderBackend | Promise<DecoderBackend>;
}

/**
 * The backend of a model the segmented runner takes, the first whose rules it meets: native-q8,
 * native-f32, else onnx-segments (every model). `f32` is the small-model addon (a parameter for tests).
 */
export function chooseDecoderBackend(model: LoadedModel, opts: BackendOptions, native: NativeKernels, f32: F32Addon | null = f32Addon()): BackendChoice {
  if (!model.weights) throw new Error(`model ${model.source}: the segmented runner builds from weights`);
  const c = model.config as DecoderArchConfig;
  const dtype = graphDtypeFor(c, 'causalLmSegments', opts.dtype);
  if (opts.device !== 'cpu') return { name: 'onnx-segments', reason: `${opts.device}: the session keeps the linears on the device`, create: createOnnxSegments };
  const q8 = nativeQ8Refusal(c, model.weights, dtype, opts, native);
  if (q8 === null) return { name: 'native-q8', reason: "all linears Q8_0, in the addon's Q8_0 GEMM (AVX512-VNNI or AVX2)", create: createNativeQ8 };
  const small = nativeF32Refusal(c, model.weights, dtype, opts, f32);
  if (small === null && f32) {
    return { name: 'native-f32', reason: `float32 weights, hidden size ${c.hiddenSize} <= ${smallDecoderMaxHidden(f32)} (${f32.simd} kernels)`, create: (ctx) => createNativeF32(ctx, f32) };
  }
  return { name: 'onnx-segments', reason: `not native-q8: ${q8}; not native-f32: ${small}`, create: createOnnxSegments };
}

/** Why the native Q8_0 path does not apply, or null when it does. */
function nativeQ8Refusal(c: DecoderArchConfig, weights: ModelWeights, dtype: string, opts: BackendOptions, native: NativeKernels): string | null {
  if (opts.nativeQ8Gemm === false) return 'turned off';
  if (!native.q8Available) return 'the CPU has neither AVX512-VNNI nor AVX2 + FMA + F16C';
  if (dtype !== 'float32') return `the graphs are ${dtype}`;
  if (opts.keepQuantized === false) return 'the weights are dequantized';
  if (c.attentionBias) return 'the QKV projections have biases';
  if (c.hiddenSize % 32 || c.intermediateSize % 32 || (c.numHeads * c.headDim) % 32) return 'a linear width is not a multiple of 32';
  if (hasMoeLayers(c) && c.expertIntermediateSize! % 32) return 'the experts\' width is not a multiple of 32';
  if (!allLinearsQ8(c, weights)) return 'not every linear is Q8_0';
  return null;
}

/** Why the small float32 path does not apply, or null when it does. */
function nativeF32Refusal(c: DecoderArchConfig, weights: ModelWeights, dtype: string, opts: BackendOptions, f32: F32Addon | null): string | null {
  if (opts.smallDecoder === false) return 'turned off';
  if (!f32) return 'the ortllm_f32 addon is not built';
  if (dtype !== 'float32') return `the graphs are ${dtype}`;
  if (c.attentionBias) return 'the QKV projections have biases';
  if (c.intermediateSize === undefined) return 'the model has no gated MLP';
  if (partialRotary(c)) return partialRotary(c);
  const layout = llamaLayoutRefusal(c);
  if (layout) return layout;
  if (hasMoeLayers(c)) return 'the model has MoE layers';
  // f32Qkv runs QKV and RoPE in one call: nothing between them, one table for every layer.
  if (c.qkNorm) return 'the model has q/k norms';
  if (c.mropeSection) return 'the model rotates by M-RoPE (t, h, w) positions, which f32Qkv does not';
  if (hasLayerRope(c)) return 'its layers differ in RoPE settings';
  const max = smallDecoderMaxHidden(f32);
  if (max === 0) return "the addon has only its portable loops, which never pay";
  if (c.hiddenSize > max) return `hidden size ${c.hiddenSize} > ${max}`;
  const names = [...linearNames(c, weights), 'model.norm.weight'];
  if (!names.every((name) => weights.has(name) && weights.get(name).kind === 'f32')) return 'not every linear is float32';
  return null;
}

/** f32Qkv's RoPE rotates whole heads: why it cannot run a partial rotary config, or null. */
function partialRotary(c: DecoderArchConfig): string | null {
  const rotary = c.rotaryDim ?? c.headDim;
  return rotary === c.headDim ? null : `RoPE rotates ${rotary} of ${c.headDim} dims per head (partial rotary), which f32Qkv does not`;
}

/** What the small decoder's layer and head code (llama's norms, SwiGLU, plain logits) does not compute, or null. */
function llamaLayoutRefusal(c: DecoderArchConfig): string | null {
  if (c.sandwichNorms) return 'the layers norm their sublayer outputs (sandwich norms)';
  if (c.hiddenActivation !== undefined && c.hiddenActivation !== 'silu') return `the MLP's activation is ${c.hiddenActivation}`;
  if (c.finalLogitSoftcap) return 'the head soft-caps its logits';
  return null;
}
