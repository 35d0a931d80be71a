// Qwen2.5-VL's vision tower and patch merger as one float32 ONNX graph over one image's patch
// rows (transformers' Qwen2_5_VisionTransformerPretrainedModel). The per-size index tensors come
// from TypeScript (vision/qwen-vision-layout.ts), so one graph serves every image size:
//   patches [N, 3*T*p*p] -> patch embedding (the Conv3d as a GEMM: its kernel is the whole row)
//   -> merged units into window order -> blocks: x += proj(attention(rope(qkv(rms(x)))));
//      x += down(silu(gate(rms(x))) * up(rms(x))); windowed blocks attend within padded windows
//   -> merger: rms, 4 patches per row, Linear -> GELU -> Linear -> back to the image's order.
// Weights are named as in transformers without the `visual.` prefix; `patch_embed.proj.weight` is
// the Conv3d flattened to [hidden, 3*T*p*p].
import type { ModelWeights } from '../types';
import { patchColumns, type QwenVisionConfig } from '../vision/qwen-vision-config';
import { attrFloat, attrInt, GraphBuilder, type BuiltModel } from './graph-builder';
import { emitLinear } from './linear';
import { OnnxDataType } from './onnx-proto';
import { checkLinear, requireWeight, toF32 } from './weights';

export const QwenVisionIO = {
  patches: 'patches',
  rotaryPositions: 'rotary_positions',
  windowOrder: 'window_order',
  windowGather: 'window_gather',
  windowKeys: 'window_keys',
  windowScatter: 'window_scatter',
  restoreOrder: 'restore_order',
  embeds: 'image_embeds',
} as const;

const ROTARY_THETA = 10000;

export function buildQwenVisionGraph(config: QwenVisionConfig, weights: ModelWeights): BuiltModel {
  const g = new GraphBuilder('qwen2.5-vl-vision');
  const f32 = OnnxDataType.FLOAT;
  const i64 = OnnxDataType.INT64;
  const d = config.hiddenSize;
  const heads = config.numHeads;
  const headDim = d / heads;
  const unit = config.spatialMergeSize * config.spatialMergeSize;
  const columns = patchColumns(config);

  const vector = (name: string, length: number): string => {
    const t = requireWeight(weights, name);
    if (t.shape.length !== 1 || t.shape[0] !== length) throw new Error(`weight '${name}' has shape [${t.shape.join(', ')}], expected [${length}]`);
    return g.initializer(name, f32, [length], toF32(t));
  };
  const linear = (x: string, prefix: string, inDim: number, outDim: number, bias = true): string => {
    const w = requireWeight(weights, `${prefix}.weight`);
    checkLinear(`${prefix}.weight`, w, inDim, outDim);
    const b = bias ? toF32(requireWeight(weights, `${prefix}.bias`)) : null;
    if (b && b.length !== outDim) throw new Error(`weight '${prefix}.bias' has ${b.length} values, expected ${outDim}`);
    return emitLinear(g, x, `${prefix}.weight`, [w], b, inDim, { keepQuantized: false });
  };
  const rmsNorm = (x: string, name: string, width: number): string =>
    g.op('SimplifiedLayerNormalization', [x, vector(name, width)], { axis: attrInt(-1), epsilon: attrFloat(config.normEps) });
  /** Rows of `x` ([N, width]) regrouped by merged unit and gathered in `order`. */
  const byUnits = (x: string, width: number, order: string): string =>
    g.op('Reshape', [g.op('Gather', [g.op('Reshape', [x, g.constInt64([-1, unit * width])]), order], { axis: attrInt(0) }), g.constInt64([-1, width])]);

  const patches = g.input(QwenVisionIO.patches, f32, ['patches', columns]);
  const rotaryPositions = g.input(QwenVisionIO.rotaryPositions, i64, ['patches', 2]);
  const windowOrder = g.input(QwenVisionIO.windowOrder, i64, ['units']);
  const windowGather = g.input(QwenVisionIO.windowGather, i64, ['window_slots']);
  const windowKeys = g.input(QwenVisionIO.windowKeys, OnnxDataType.BOOL, ['windows', 1, 1, 'window_patches']);
  const windowScatter = g.input(QwenVisionIO.windowScatter, i64, ['patches']);
  const restoreOrder = g.input(QwenVisionIO.restoreOrder, i64, ['units']);

  let x = byUnits(linear(patches, 'patch_embed.proj', columns, d, false), d, windowOrder);

  // 2-D rotary: a head's first quarter of frequencies turns with the patch row, the second with
  // its column; cos/sin repeat that half over the head (rotate-half pairs i with i + headDim/2).
  const quarter = headDim / 4;
  const inverse = Array.from({ length: quarter }, (_, i) => 1 / Math.pow(ROTARY_THETA, (2 * i) / (headDim / 2)));
  const positions = g.op('Cast', [byUnits(rotaryPositions, 2, windowOrder)], { to: attrInt(f32) });
  const frequencies = g.constFloat(inverse, [1, 1, quarter]);
  // [N, 2, 1] x [1, 1, quarter] -> [N, 2, quarter] -> [N, headDim / 2]: (row freqs, column freqs)
  const angles = g.op('Reshape', [g.op('Mul', [g.op('Unsqueeze', [positions, g.constInt64([2])]), frequencies]), g.constInt64([-1, headDim / 2])]);
  const perHead = g.constInt64([-1, 1, headDim]);
  const full = g.op('Concat', [angles, angles], { axis: attrInt(1) });
  const cos = g.op('Reshape', [g.op('Cos', [full]), perHead]);
  const sin = g.op('Reshape', [g.op('Sin', [full]), perHead]);
  const headsShape = g.constInt64([-1, heads, headDim]);
  const halves = g.constInt64([headDim / 2, headDim / 2]);
  const sequence = g.constInt64([1, -1, d]);
  /** Rotated [N, D] (rotary applied per head). */
  const rotate = (t: string): string => {
    const h = g.op('Reshape', [t, headsShape]);
    const [first, second] = g.node('Split', [h, halves], 2, { axis: attrInt(2) });
    const turned = g.op('Concat', [g.op('Neg', [second]), first], { axis: attrInt(2) });
    return g.op('Reshape', [g.op('Add', [g.op('Mul', [h, cos]), g.op('Mul', [turned, sin])]), g.constInt64([-1, d])]);
  };

  // Windowed blocks attend window by window: the patches are gathered into equal padded windows
  // [windows, slots, D] (padding repeats a real row; the key mask hides it), so a block costs
  // windows x slots^2 scores instead of patches^2, and the results are gathered back per patch.
  const slots = g.op('Concat', [g.op('Slice', [g.op('Shape', [windowKeys]), g.constInt64([0]), g.constInt64([1])]), g.constInt64([-1, d])], { axis: attrInt(0) });
  // onnxruntime wants the mask's query axis whole: [windows, 1, slots] keys -> [windows, 1, slots, slots].
  const keysShape = g.op('Shape', [windowKeys]);
  const side = g.op('Slice', [keysShape, g.constInt64([3]), g.constInt64([4])]);
  const keyMask = g.op('Expand', [windowKeys, g.op('Concat', [g.op('Slice', [keysShape, g.constInt64([0]), g.constInt64([2])]), side, side], { axis: attrInt(0) })]);
  const intoWindows = (t: string) => g.op('Reshape', [g.op('Gather', [t, windowGather], { axis: attrInt(0) }), slots]);
  const attention = (q: string, k: string, v: string, windowed: boolean): string => {
    const headCounts = { q_num_heads: attrInt(heads), kv_num_heads: attrInt(heads) };
    if (!windowed) return g.op('Reshape', [g.op('Attention', [q, k, v].map((t) => g.op('Reshape', [t, sequence])), headCounts), g.constInt64([-1, d])]);
    const attended = g.op('Attention', [intoWindows(q), intoWindows(k), intoWindows(v), keyMask], headCounts);
    return g.op('Gather', [g.op('Reshape', [attended, g.constInt64([-1, d])]), windowScatter], { axis: attrInt(0) });
  };

  const fullAttention = new Set(config.fullAttentionBlocks);
  const thirds = g.constInt64([d, d, d]);
  for (let b = 0; b < config.depth; b++) {
    const p = `blocks.${b}`;
    const [q, k, v] = g.node('Split', [linear(rmsNorm(x, `${p}.norm1.weight`, d), `${p}.attn.qkv`, d, 3 * d), thirds], 3, { axis: attrInt(1) });
    const attended = attention(rotate(q), rotate(k), v, !fullAttention.has(b));
    x = g.op('Add', [x, linear(attended, `${p}.attn.proj`, d, d)]);
    const normed = rmsNorm(x, `${p}.norm2.weight`, d);
    const gate = linear(normed, `${p}.mlp.gate_proj`, d, config.intermediateSize);
    const gated = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), linear(normed, `${p}.mlp.up_proj`, d, config.intermediateSize)]);
    x = g.op('Add', [x, linear(gated, `${p}.mlp.down_proj`, config.intermediateSize, d)]);
  }

  const merged = g.op('Reshape', [rmsNorm(x, 'merger.ln_q.weight', d), g.constInt64([-1, unit * d])]);
  const projected = linear(g.op('Gelu', [linear(merged, 'merger.mlp.0', unit * d, unit * d)]), 'merger.mlp.2', unit * d, config.outHiddenSize);
  g.node('Gather', [projected, restoreOrder], [QwenVisionIO.embeds], { axis: attrInt(0) });
  g.output(QwenVisionIO.embeds, f32, ['units', config.outHiddenSize]);
  return g.build({ '': 23 });
}
