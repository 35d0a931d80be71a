// onnx-segments' LoRA inputs (graph/lora-graph.ts): per segment and adapted linear, the stacked
// A and scaled Bᵀ of every slot, kept here between runs and rewritten for a slot only when the
// adapter in it changes (the runner keeps an adapter in its slot while it runs), and the pass's
// row mask. A pass feeds the stacks only up to its highest slot (a prefix: no copy), so a pass
// without adapter rows feeds them empty and its products cost only their nodes' dispatch.
import * as ort from 'onnxruntime-node';
import { LORA_MODULES, type LoraModule, type LoraWeights } from '../../lora/lora-weights';
import { LoraInputs, type LoraGraphShape } from '../../graph/lora-graph';
import type { DecoderArchConfig } from '../../types';
import { baseLinearShape } from '../../lora/base-linears';
import type { PassRows } from './decoder-backend';

/** The attention's linears: in segment i they are layer i's; the others are layer i - 1's. */
const ATTENTION_INPUTS: readonly LoraModule[] = ['q_proj', 'k_proj', 'v_proj'];

/** One adapted linear's stacked inputs in one segment. */
interface StackedPair {
  module: LoraModule;
  layer: number;
  inFeatures: number;
  outFeatures: number;
  /** [maxLoras·maxRank, in]. */
  a: Float32Array;
  /** [maxLoras·maxRank, out]. */
  bt: Float32Array;
}

export class OnnxLoraFeeds {
  /** Per segment, its adapted linears (those its graph has inputs for). */
  private readonly segments: StackedPair[][];
  /** The adapter whose pairs each slot's rows of the stacks hold. */
  private readonly loaded: (LoraWeights | null)[];
  /** The stacks' rows: maxLoras·maxRank. */
  private readonly width: number;

  /** `segmentInputs`: per segment, its graph's input names. */
  constructor(
    private readonly shape: LoraGraphShape,
    config: DecoderArchConfig,
    segmentInputs: readonly (readonly string[])[],
  ) {
    this.width = shape.maxLoras * shape.maxRank;
    this.loaded = new Array<LoraWeights | null>(shape.maxLoras).fill(null);
    this.segments = segmentInputs.map((inputs, segment) =>
      LORA_MODULES.filter((m) => inputs.includes(LoraInputs.a(m))).map((module) => {
        const { inFeatures, outFeatures } = baseLinearShape(config, module);
        const a = new Float32Array(this.width * inFeatures);
        const bt = new Float32Array(this.width * outFeatures);
        const layer = ATTENTION_INPUTS.includes(module) ? segment : segment - 1;
        return { module, layer, inFeatures, outFeatures, a, bt };
      }),
    );
  }

  /** The pass's feeds of segment i (none where its graph has no LoRA inputs), after bringing every slot the pass runs up to date. */
  passFeeds(pass: PassRows): (segment: number) => Record<string, ort.Tensor> {
    const n = pass.rows;
    const rank = this.shape.maxRank;
    let width = 0;
    let mask = new Float32Array(0);
    if (pass.lora) {
      pass.lora.slots.forEach((weights, slot) => {
        if (weights && weights !== this.loaded[slot]) this.load(slot, weights);
      });
      width = (Math.max(...pass.lora.rowSlot) + 1) * rank;
      mask = new Float32Array(n * width);
      pass.lora.rowSlot.forEach((slot, row) => {
        if (slot >= 0) mask.fill(1, row * width + slot * rank, row * width + (slot + 1) * rank);
      });
    }
    const maskTensor = new ort.Tensor('float32', mask, [n, width]);
    return (segment) => {
      const pairs = this.segments[segment];
      if (pairs.length === 0) return {};
      const feeds: Record<string, ort.Tensor> = { [LoraInputs.mask]: maskTensor };
      for (const p of pairs) {
        feeds[LoraInputs.a(p.module)] = new ort.Tensor('float32', p.a.subarray(0, width * p.inFeatures), [width, p.inFeatures]);
        feeds[LoraInputs.bt(p.module)] = new ort.Tensor('float32', p.bt.subarray(0, width * p.outFeatures), [width, p.outFeatures]);
      }
      return feeds;
    };
  }

  /** Writes `weights`' pairs into slot `slot`'s rows of every stack (zeros where a module is not adapted or beyond its rank). */
  private load(slot: number, weights: LoraWeights): void {
    const rank = this.shape.maxRank;
    for (const pairs of this.segments) {
      for (const p of pairs) {
        const rows = slot * rank;
        p.a.fill(0, rows * p.inFeatures, (rows + rank) * p.inFeatures);
        p.bt.fill(0, rows * p.outFeatures, (rows + rank) * p.outFeatures);
        const pair = weights.layers[p.layer]?.get(p.module);
        if (!pair) continue;
        p.a.set(pair.a, rows * p.inFeatures);
        for (let o = 0; o < p.outFeatures; o++) {
          for (let r = 0; r < pair.rank; r++) p.bt[(rows + r) * p.outFeatures + o] = pair.b[o * pair.rank + r];
        }
      }
    }
    this.loaded[slot] = weights;
  }
}
