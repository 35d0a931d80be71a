// A vision tower (SigLIP or CLIP ViT) and its projector as one ONNX graph, float32.
//
// pixel_values [B, 3, H, W] -> patches [B*N, 3*p*p] (the stride-p conv as a Gemm over each
// patch's (channel, y, x) values) -> + position embeddings (CLIP: the class token first, then
// pre_layrnorm) -> pre-LN layers: x += out_proj(MHA(LN1 x)); x += fc2(act(fc1(LN2 x))) (long
// sequences attend a few heads per node) -> SigLIP's post_layernorm -> the projector:
//   gemma3: [B, side, side, D] -> AveragePool k x k -> Gemma RMSNorm (1 + w) -> x W  ([D, text])
//   mlp:    drop the class token ('default') -> linear_1 -> GELU (erf) -> linear_2
// Output image_embeds [B * tokens, text hidden], each image's rows in order.
import { attrInt, GraphBuilder, type BuiltModel } from '../../graph/graph-builder';
import { emitLinear } from '../../graph/linear';
import { OnnxDataType } from '../../graph/onnx-proto';
import { concatF32, requireWeight, toF32 } from '../../graph/weights';
import { WhisperGraphParts } from '../../graph/whisper-parts';
import type { ModelWeights } from '../../types';
import { patchesPerSide, sequenceLength, type VitConfig } from './vit-config';
import { layerPrefix, PROJECTOR, TOWER } from './vit-weights';

export const VitIO = { pixels: 'pixel_values', embeds: 'image_embeds' } as const;

const FLOAT32 = { keepQuantized: false } as const;

export function buildVitGraph(c: VitConfig, weights: ModelWeights, opts: VitGraphOptions = {}): BuiltModel {
  const g = new GraphBuilder('vision-tower');
  const f32 = OnnxDataType.FLOAT;
  const d = c.hiddenSize;
  const parts = new WhisperGraphParts(g, weights, FLOAT32, d, c.layerNormEps);
  const pixels = g.input(VitIO.pixels, f32, ['batch', 3, c.imageSize, c.imageSize]);
  const seq = sequenceLength(c);
  const perImage = g.constInt64([-1, seq, d]);
  const rows = g.constInt64([-1, d]);

  let hidden = g.op('Reshape', [embed(g, c, weights, pixels), rows]);
  if (c.preNorm) hidden = parts.layerNorm(hidden, `${TOWER}pre_layrnorm`);
  for (let l = 0; l < c.numLayers; l++) {
    const p = layerPrefix(l);
    const normed = parts.layerNorm(hidden, `${p}layer_norm1`);
    const projections = ['q_proj', 'k_proj', 'v_proj'].map((n) => `${p}self_attn.${n}`);
    const qkvWeights = projections.map((n) => requireWeight(weights, `${n}.weight`));
    const qkvBias = concatF32(projections.map((n) => parts.vector(`${n}.bias`, d)));
    const qkv = emitLinear(g, normed, `${p}self_attn.qkv_proj.weight`, qkvWeights, qkvBias, d, FLOAT32);
    const [q, k, v] = g.node('Split', [qkv, g.constInt64([d, d, d])], 3, { axis: attrInt(1) }).map((x) => g.op('Reshape', [x, perImage]));
    const attn = g.op('Reshape', [attention(g, parts, c, [q, k, v], opts.scoresBudgetBytes ?? SCORES_BUDGET_BYTES), rows]);
    hidden = g.op('Add', [hidden, parts.linear(attn, `${p}self_attn.out_proj`, d, d)]);
    const inner = activation(g, c, parts.linear(parts.layerNorm(hidden, `${p}layer_norm2`), `${p}mlp.fc1`, d, c.intermediateSize));
    hidden = g.op('Add', [hidden, parts.linear(inner, `${p}mlp.fc2`, c.intermediateSize, d)]);
  }
  if (c.postNorm) hidden = parts.layerNorm(hidden, `${TOWER}post_layernorm`);

  const projected = c.projector.kind === 'gemma3' ? gemma3Projector(g, c, weights, hidden) : mlpProjector(g, c, parts, hidden);
  g.node('Identity', [projected], [VitIO.embeds]);
  g.output(VitIO.embeds, f32, ['rows', c.projector.textHiddenSize]);
  return g.build({ '': 23 });
}

/** Patch rows times the conv kernel, plus positions (and the class token first): [B, seq, D]. */
function embed(g: GraphBuilder, c: VitConfig, weights: ModelWeights, pixels: string): string {
  const f32 = OnnxDataType.FLOAT;
  const d = c.hiddenSize;
  const side = patchesPerSide(c);
  const p = c.patchSize;
  const grid = g.op('Reshape', [pixels, g.constInt64([-1, 3, side, p, side, p])]);
  const patches = g.op('Reshape', [g.op('Transpose', [grid], { perm: { ints: [0, 2, 4, 1, 3, 5] } }), g.constInt64([-1, 3 * p * p])]);
  const kernel = requireWeight(weights, `${TOWER}embeddings.patch_embedding.weight`);
  const bias = c.patchBias ? toF32(requireWeight(weights, `${TOWER}embeddings.patch_embedding.bias`)) : null;
  const flatKernel = { kind: 'f32' as const, shape: [d, 3 * p * p], data: toF32(kernel) };
  let tokens = g.op('Reshape', [emitLinear(g, patches, `${TOWER}embeddings.patch_embedding.weight`, [flatKernel], bias, 3 * p * p, FLOAT32), g.constInt64([-1, side * side, d])]);
  if (c.classToken) {
    const cls = g.initializer(`${TOWER}embeddings.class_embedding`, f32, [1, 1, d], toF32(requireWeight(weights, `${TOWER}embeddings.class_embedding`)));
    const batch = g.op('Slice', [g.op('Shape', [tokens]), g.constInt64([0]), g.constInt64([1])]);
    const perBatch = g.op('Expand', [cls, g.op('Concat', [batch, g.constInt64([1, d])], { axis: attrInt(0) })]);
    tokens = g.op('Concat', [perBatch, tokens], { axis: attrInt(1) });
  }
  const positionName = `${TOWER}embeddings.position_embedding.weight`;
  const positions = g.initializer(positionName, f32, [sequenceLength(c), d], toF32(requireWeight(weights, positionName)));
  return g.op('Add', [tokens, positions]);
}

/**
 * Most bytes of attention scores one Attention node holds: onnxruntime keeps a node's whole
 * [heads, seq, seq] score tensor, so Gemma 3's 4096 patches run a few heads per node instead of
 * all 16 at once (the peak memory of an image then stays near the weights').
 */
export const SCORES_BUDGET_BYTES = 256 * 2 ** 20;

export interface VitGraphOptions {
  /** Most bytes of scores one Attention node may hold (SCORES_BUDGET_BYTES when absent). */
  scoresBudgetBytes?: number;
}

/** Self-attention of [B, seq, D] q/k/v, in groups of heads whose scores fit the budget. */
function attention(g: GraphBuilder, parts: WhisperGraphParts, c: VitConfig, [q, k, v]: string[], budget: number): string {
  const scoreBytes = sequenceLength(c) ** 2 * 4;
  let perNode = c.numHeads;
  while (perNode > 1 && perNode * scoreBytes > budget) perNode = largestDivisorBelow(c.numHeads, perNode);
  if (perNode === c.numHeads) return parts.attention(q, k, v, c.numHeads);
  const groups = c.numHeads / perNode;
  const width = (c.hiddenSize / c.numHeads) * perNode;
  const split = (x: string) => g.node('Split', [x, g.constInt64(Array<number>(groups).fill(width))], groups, { axis: attrInt(2) });
  const [qs, ks, vs] = [split(q), split(k), split(v)];
  return g.op('Concat', qs.map((qg, i) => parts.attention(qg, ks[i], vs[i], perNode)), { axis: attrInt(2) });
}

function largestDivisorBelow(n: number, below: number): number {
  for (let d = below - 1; d > 1; d--) if (n % d === 0) return d;
  return 1;
}

function activation(g: GraphBuilder, c: VitConfig, x: string): string {
  if (c.activation === 'gelu_tanh') return g.op('Gelu', [x], { approximate: { s: 'tanh' } });
  return g.op('Mul', [x, g.op('Sigmoid', [g.op('Mul', [x, g.constFloat([1.702], [])])])]);
}

/** Gemma3MultiModalProjector over [B*N, D] rows: [B*tokens, text]. */
function gemma3Projector(g: GraphBuilder, c: VitConfig, weights: ModelWeights, hidden: string): string {
  if (c.projector.kind !== 'gemma3') throw new Error('not a gemma3 projector');
  const f32 = OnnxDataType.FLOAT;
  const d = c.hiddenSize;
  const side = patchesPerSide(c);
  const tokens = c.projector.tokensPerImage;
  const kernel = side / Math.round(Math.sqrt(tokens));
  const planes = g.op('Transpose', [g.op('Reshape', [hidden, g.constInt64([-1, side, side, d])])], { perm: { ints: [0, 3, 1, 2] } });
  const pooled = g.op('AveragePool', [planes], { kernel_shape: { ints: [kernel, kernel] }, strides: { ints: [kernel, kernel] } });
  const pooledRows = g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [pooled, g.constInt64([-1, d, tokens])])], { perm: { ints: [0, 2, 1] } }), g.constInt64([-1, d])]);
  const normName = `${PROJECTOR}mm_soft_emb_norm.weight`;
  const gain = g.initializer(normName, f32, [d], toF32(requireWeight(weights, normName)));
  const normed = g.op('SimplifiedLayerNormalization', [pooledRows, gain], { axis: attrInt(-1), epsilon: { f: c.projector.normEps } });
  const projName = `${PROJECTOR}mm_input_projection_weight`;
  const projection = g.initializer(projName, f32, [d, c.projector.textHiddenSize], toF32(requireWeight(weights, projName)));
  return g.op('MatMul', [normed, projection]);
}

/** LLaVA's projector over [B*seq, D] rows (the class token dropped unless 'all'): [B*tokens, text]. */
function mlpProjector(g: GraphBuilder, c: VitConfig, parts: WhisperGraphParts, hidden: string): string {
  const d = c.hiddenSize;
  const text = c.projector.textHiddenSize;
  let features = hidden;
  if (c.classToken && c.select === 'patches') {
    const perImage = g.op('Reshape', [hidden, g.constInt64([-1, sequenceLength(c), d])]);
    features = g.op('Reshape', [g.op('Slice', [perImage, g.constInt64([1]), g.constInt64([sequenceLength(c)]), g.constInt64([1])]), g.constInt64([-1, d])]);
  }
  const up = g.op('Gelu', [parts.linear(features, `${PROJECTOR}linear_1`, d, text)]);
  return parts.linear(up, `${PROJECTOR}linear_2`, text, text);
}
