// onnx-segments' LoRA inputs (graph/lora-graph.ts): per segment and adapted linear, the stacked
// A and scaled Bᵀ of every slot, kept here between runs and rewritten for a slot only when the
// adapter in it changes (the runner keeps an adapter in its slot while it runs), and the pass's
// row mask. A pass without adapter rows feeds a zero mask: the products are zero, y unchanged.
import * as ort from 'onnxruntime-node';
import { LORA_MODULES, type LoraModule, type LoraWeights } from '../../lora/lora-weights';
import { LoraInputs, type LoraGraphShape } from '../../graph/lora-graph';
import type { DecoderArchConfig } from '../../types';
import { loraModuleShapes } from '../lora-slots';
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
  tensors: Record<string, ort.Tensor>;
}

export class OnnxLoraFeeds {
  /** Per segment, its adapted linears (those its graph has inputs for). */
  private readonly segments: StackedPair[][];
  /** The adapter whose pairs each slot's rows of the stacks hold. */
  private readonly loaded: (LoraWeights | null)[];
  private readonly width: number;
  private zeros = new Float32Array(0);

  /** `segmentInputs`: per segment, its graph's input names. */
  constructor(
    private readonly shape: LoraGraphShape,
    config: DecoderArchConfig,
    segmentInputs: readonly (readonly string[])[],
  ) {
    const shapes = loraModuleShapes(config);
    this.width = shape.maxLoras * shape.maxRank;
    this.loaded = new Array<LoraWeights | null>(shape.maxLoras).fill(null);
    this.segments = segmentInputs.map((inputs, segment) =>
      LORA_MODULES.filter((m) => inputs.includes(LoraInputs.a(m))).map((module) => {
        const [inFeatures, outFeatures] = shapes[module];
        const a = new Float32Array(this.width * inFeatures);
        const bt = new Float32Array(this.width * outFeatures);
        const layer = ATTENTION_INPUTS.includes(module) ? segment : segment - 1;
        const tensors = {
          [LoraInputs.a(module)]: new ort.Tensor('float32', a, [this.width, inFeatures]),
          [LoraInputs.bt(module)]: new ort.Tensor('float32', bt, [this.width, outFeatures]),
        };
        return { module, layer, inFeatures, outFeatures, a, bt, tensors };
      }),
    );
  }

  /** The pass's mask feed, after bringing every slot the pass runs up to date. */
  maskFeed(pass: PassRows): Record<string, ort.Tensor> {
    const n = pass.rows;
    if (!pass.lora) return { [LoraInputs.mask]: new ort.Tensor('float32', this.zeroMask(n * this.width), [n, this.width]) };
    pass.lora.slots.forEach((weights, slot) => {
      if (weights && weights !== this.loaded[slot]) this.load(slot, weights);
    });
    const mask = new Float32Array(n * this.width);
    const rank = this.shape.maxRank;
    pass.lora.rowSlot.forEach((slot, row) => {
      if (slot >= 0) mask.fill(1, row * this.width + slot * rank, row * this.width + (slot + 1) * rank);
    });
    return { [LoraInputs.mask]: new ort.Tensor('float32', mask, [n, this.width]) };
  }

  /** Segment `index`'s stacked A and Bᵀ feeds (none where its graph has no LoRA inputs). */
  stackFeeds(index: number): Record<string, ort.Tensor> {
    const pairs = this.segments[index];
    return pairs.length === 0 ? {} : Object.assign({}, ...pairs.map((p) => p.tensors)) as Record<string, ort.Tensor>;
  }

  /** Whether segment `index` takes the mask. */
  hasInputs(index: number): boolean {
    return this.segments[index].length > 0;
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

  /** A zero mask of `length`, a view of one kept at the largest length so far (never written). */
  private zeroMask(length: number): Float32Array {
    if (this.zeros.length < length) this.zeros = new Float32Array(length);
    return this.zeros.subarray(0, length);
  }
}
