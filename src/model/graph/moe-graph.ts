// A MoE feed-forward block inside an ONNX graph (the onnx-segments backend and the in-graph
// runner): router → softmax over the experts → TopK (ties: lowest index first, ONNX's rule) →
// optional renormalisation → for each expert, the rows routed to it gathered (NonZero + Gather),
// its SwiGLU MLP over those rows only, scaled by their routing weights and scatter-added
// (ScatterND, reduction add) into the output. So each expert's weights are read once per run,
// by the rows that chose it; an expert no row chose runs on zero rows (no weight reads).
// Routing and the experts compute in float32 whatever the graph's dtype (ScatterND's add has no
// float16 kernel in onnxruntime's CPU provider).
import { expertWeight } from '../moe/expert-weights';
import { moeWeightNames } from '../moe/moe-config';
import type { DecoderArchConfig, ModelWeights } from '../types';
import { castTo } from './compute-dtype';
import { attrInt, attrInts, type GraphBuilder } from './graph-builder';
import { emitLinear, type LinearOptions } from './linear';
import { checkLinear, requireWeight } from './weights';

/** The block's output [rows, hidden] for `normed` (the post-attention-normed rows) of layer `layer`. */
export function emitMoe(g: GraphBuilder, normedIn: string, c: DecoderArchConfig, weights: ModelWeights, layer: number, opts: LinearOptions): string {
  const dtype = opts.dtype ?? 'float32';
  const f32: LinearOptions = { ...opts, dtype: 'float32' };
  const experts = c.numExperts!;
  const k = c.numExpertsPerToken!;
  const ffn = c.expertIntermediateSize!;
  const h = c.hiddenSize;
  const names = moeWeightNames(`model.layers.${layer}.`);
  const normed = castTo(g, normedIn, dtype, 'float32');

  const router = requireWeight(weights, names.router);
  checkLinear(names.router, router, h, experts);
  const probs = g.op('Softmax', [emitLinear(g, normed, names.router, [router], null, h, f32)], { axis: attrInt(-1) });
  const [top, chosen] = g.node('TopK', [probs, g.constInt64([k])], 2, { axis: attrInt(-1), largest: attrInt(1), sorted: attrInt(1) });
  const topWeights = c.normTopKProb ? g.op('Div', [top, g.op('ReduceSum', [top, g.constInt64([-1])], { keepdims: attrInt(1) })]) : top;
  // Dense [rows, experts] routing weights and a 0/1 mask of the chosen experts, transposed so an
  // expert's column is one Gather along axis 0.
  const zeros = g.op('ConstantOfShape', [g.op('Shape', [probs])]);
  const scatter = (updates: string) => g.op('Transpose', [g.op('ScatterElements', [zeros, chosen, updates], { axis: attrInt(1) })], { perm: attrInts([1, 0]) });
  const routing = scatter(topWeights);
  const mask = scatter(g.op('Expand', [g.constFloat([1]), g.op('Shape', [top])]));

  const stack = (name: string, out: number, inp: number) => {
    const t = requireWeight(weights, name);
    if (t.shape.join(',') !== [experts, out, inp].join(',')) throw new Error(`weight '${name}' has shape [${t.shape.join(', ')}], expected [${experts}, ${out}, ${inp}]`);
    return t;
  };
  const gates = stack(names.gate, ffn, h);
  const ups = stack(names.up, ffn, h);
  const downs = stack(names.down, h, ffn);

  let out = g.op('ConstantOfShape', [g.op('Shape', [normed])]);
  for (let e = 0; e < experts; e++) {
    const index = g.constInt64([e], []);
    const rows = g.op('Reshape', [g.op('NonZero', [g.op('Gather', [mask, index], { axis: attrInt(0) })]), g.constInt64([-1])]);
    const x = g.op('Gather', [normed, rows], { axis: attrInt(0) });
    const prefix = `model.layers.${layer}.mlp.experts.${e}.`;
    const gu = emitLinear(g, x, `${prefix}gate_up_proj.weight`, [expertWeight(gates, e), expertWeight(ups, e)], null, h, f32);
    const [gate, up] = g.node('Split', [gu, g.constInt64([ffn, ffn])], 2, { axis: attrInt(1) });
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    const y = emitLinear(g, act, `${prefix}down_proj.weight`, [expertWeight(downs, e)], null, ffn, f32);
    const scale = g.op('Unsqueeze', [g.op('Gather', [g.op('Gather', [routing, index], { axis: attrInt(0) }), rows], { axis: attrInt(0) }), g.constInt64([1])]);
    const at = g.op('Unsqueeze', [rows, g.constInt64([1])]);
    out = g.op('ScatterND', [out, at, g.op('Mul', [y, scale])], { reduction: { s: 'add' } });
  }
  return castTo(g, out, 'float32', dtype);
}
