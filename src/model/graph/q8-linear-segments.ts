// The llama/qwen2 decoder (decoder-segments.ts) when the addon runs all of it but the embedding
// lookup: every linear (QKV, o_proj, the MLP's gate_up and down, the head) in its Q8_0 GEMM
// (native/src/q8-gemm.cc: AVX512-VNNI, or AVX2 via q8-gemm-avx2.inc), RoPE and SiLU(gate) * up beside it, and the RMSNorms with
// their residual adds (native/src/rms-norm.cc). Applies where every such weight is Q8_0, no QKV
// bias, the graphs would be float32, and the CPU has the instructions. So there are no ONNX
// segments (count 0): a step on this path runs no onnxruntime session. Elsewhere (neither VNNI nor AVX2, CUDA,
// other weight formats) the norms stay in decoder-segments.ts's graphs.
//
// Why: MatMulNBits (accuracy level 4, int8 activations) ran 1.2-3.5x slower than the addon's kernel,
// which quantizes activations the same way (greedy tokens stay the same), and each remaining norm
// segment's onnxruntime run cost most of what a batch-1 step had left above the GEMMs. Figures:
// docs/perf/q8-gemm.md and docs/perf/segmented-runner.md.
import { unpackGgml } from './ggml-unpack';
import type { SegmentedDecoder, SegmentedDecoderOptions } from './decoder-segments';
import { ropeTables } from './rope';
import { checkLinear, concatArrays, elementCount, requireWeight, toF32 } from './weights';
import type { DecoderArchConfig, ModelWeights } from '../types';

/** A Q8_0 weight [n, k] as q8Pack takes it: codes q + 128 row-major, one scale per 32 codes. */
export interface Q8Weight {
  codes: Uint8Array;
  scales: Float32Array;
  n: number;
  k: number;
}

/** Layer l's linears: q, k, v, o_proj, gate_up (gate rows, then up rows) and down_proj. */
export interface Q8Layer<W = Q8Weight> {
  q: W;
  k: W;
  v: W;
  o: W;
  gateUp: W;
  down: W;
}

/** The RMSNorms' weights and epsilon: layer l's input and post-attention norms, and the final one. */
export interface RmsNorms {
  input: Float32Array[];
  post: Float32Array[];
  final: Float32Array;
  eps: number;
}

/** The linears the runner runs in the addon (read from the weights when asked, to be packed and released), and the norms. */
export interface Q8Linears {
  layer(l: number): Q8Layer;
  head(): Q8Weight;
  norms: RmsNorms;
}

const prefix = (l: number) => `model.layers.${l}.`;

function headName(c: DecoderArchConfig, weights: ModelWeights): string {
  return !c.tieWordEmbeddings && weights.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
}

function nativeLinearNames(c: DecoderArchConfig, weights: ModelWeights): string[] {
  const names = [headName(c, weights)];
  const linears = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'];
  for (let l = 0; l < c.numLayers; l++) names.push(...linears.map((n) => `${prefix(l)}${n}.weight`));
  return names;
}

/** True when every linear the addon would take is Q8_0 and the graphs are float32. */
export function q8LinearsApply(c: DecoderArchConfig, weights: ModelWeights, opts: SegmentedDecoderOptions): boolean {
  if ((opts.dtype ?? 'float32') !== 'float32' || !opts.keepQuantized || c.attentionBias || c.hiddenSize % 32 || c.intermediateSize % 32 || (c.numHeads * c.headDim) % 32) return false;
  return nativeLinearNames(c, weights).every((name) => {
    if (!weights.has(name)) return false;
    const t = weights.get(name);
    return t.kind === 'quantized' && t.format === 'q8_0';
  });
}

function q8Weight(weights: ModelWeights, names: string[], k: number, outs: number[]): Q8Weight {
  const parts = names.map((name, i) => {
    const t = requireWeight(weights, name);
    checkLinear(name, t, k, outs[i]);
    if (t.kind !== 'quantized' || t.format !== 'q8_0') throw new Error(`weight '${name}' is not Q8_0`);
    return unpackGgml('q8_0', t.data, elementCount(t.shape))!;
  });
  const n = outs.reduce((a, b) => a + b, 0);
  return {
    codes: concatArrays(parts.map((p) => p.codes), (len) => new Uint8Array(len)),
    scales: concatArrays(parts.map((p) => p.scales), (len) => new Float32Array(len)),
    n,
    k,
  };
}

/** No segments (see the header): the linears and the norms, for the addon. */
export function q8LinearSegments(c: DecoderArchConfig, weights: ModelWeights, opts: SegmentedDecoderOptions): SegmentedDecoder & { q8Linears: Q8Linears } {
  const { cos, sin } = ropeTables(c, opts.maxPositions);
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const h = c.hiddenSize;
  const inter = c.intermediateSize;
  const norm = (name: string) => toF32(requireWeight(weights, name));
  return {
    count: 0,
    build: (index) => {
      throw new RangeError(`segment ${index} does not exist: the addon runs this decoder whole`);
    },
    embeddingName: 'model.embed_tokens.weight',
    rope: { cos, sin, half: c.headDim / 2 },
    q8Linears: {
      layer: (l) => ({
        q: q8Weight(weights, [`${prefix(l)}self_attn.q_proj.weight`], h, [qDim]),
        k: q8Weight(weights, [`${prefix(l)}self_attn.k_proj.weight`], h, [kvDim]),
        v: q8Weight(weights, [`${prefix(l)}self_attn.v_proj.weight`], h, [kvDim]),
        o: q8Weight(weights, [`${prefix(l)}self_attn.o_proj.weight`], qDim, [h]),
        gateUp: q8Weight(weights, [`${prefix(l)}mlp.gate_proj.weight`, `${prefix(l)}mlp.up_proj.weight`], h, [inter, inter]),
        down: q8Weight(weights, [`${prefix(l)}mlp.down_proj.weight`], inter, [h]),
      }),
      head: () => q8Weight(weights, [headName(c, weights)], h, [c.vocabSize]),
      norms: {
        input: Array.from({ length: c.numLayers }, (_, l) => norm(`${prefix(l)}input_layernorm.weight`)),
        post: Array.from({ length: c.numLayers }, (_, l) => norm(`${prefix(l)}post_attention_layernorm.weight`)),
        final: norm('model.norm.weight'),
        eps: c.rmsNormEps,
      },
    },
  };
}
