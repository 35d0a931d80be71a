// The segmented runner's LoRA adapters (ModelRunner.loras): one copy of each adapter, shared by
// every sequence naming it, and the maxLoras slots a pass's adapters occupy. An adapter keeps its
// slot from step to step while it runs, so a backend that copies adapters into per-slot arrays
// (onnx-segments) copies one again only when its slot changes hands.
import { isMoeLayer } from '../moe/moe-config';
import { LORA_MODULES, type LoraModule, type LoraWeights } from '../lora/lora-weights';
import type { DecoderArchConfig, RunnerLoras, StepSequence } from '../types';
import type { PassLora } from './backends/decoder-backend';

/** The MLP's adapted linears: a MoE layer (gpt-oss's feed-forward block too) has none of them. */
const MLP_MODULES: readonly LoraModule[] = ['gate_proj', 'up_proj', 'down_proj'];

export class LoraSlots implements RunnerLoras {
  private readonly adapters = new Map<number, LoraWeights>();
  /** The adapter id in each slot (0: empty). */
  private readonly slotIds: number[];

  constructor(
    private readonly config: DecoderArchConfig,
    readonly maxLoras: number,
    private readonly maxRank: number,
  ) {
    if (!Number.isInteger(maxLoras) || maxLoras < 1) throw new Error(`maxLoras must be a positive integer, got ${maxLoras}`);
    if (!Number.isInteger(maxRank) || maxRank < 1) throw new Error(`maxRank must be a positive integer, got ${maxRank}`);
    this.slotIds = new Array<number>(maxLoras).fill(0);
  }

  add(id: number, weights: LoraWeights): void {
    if (!Number.isInteger(id) || id <= 0) throw new Error(`a LoRA adapter id must be a positive integer, got ${id}`);
    this.check(weights);
    this.adapters.set(id, weights);
  }

  remove(id: number): void {
    this.adapters.delete(id);
    const slot = this.slotIds.indexOf(id);
    if (slot >= 0) this.slotIds[slot] = 0;
  }

  /** The pass's adapters in their slots and each row's slot, or undefined when no sequence of `batch` names one. */
  passLora(batch: readonly StepSequence[]): PassLora | undefined {
    const ids = [...new Set(batch.map((s) => s.lora ?? 0).filter((id) => id !== 0))];
    if (ids.length === 0) return undefined;
    if (ids.length > this.maxLoras) throw new Error(`a step names ${ids.length} LoRA adapters, more than max_loras (${this.maxLoras})`);
    const unknown = ids.find((id) => !this.adapters.has(id));
    if (unknown !== undefined) throw new Error(`LoRA adapter ${unknown} is not loaded in the runner`);
    const slotOf = this.assign(ids);
    const rows = batch.reduce((n, s) => n + s.tokens.length, 0);
    const rowSlot = new Int32Array(rows);
    let row = 0;
    for (const s of batch) {
      rowSlot.fill(s.lora ? slotOf.get(s.lora)! : -1, row, row + s.tokens.length);
      row += s.tokens.length;
    }
    return { slots: this.slotIds.map((id) => (id === 0 ? null : (this.adapters.get(id) ?? null))), rowSlot };
  }

  /** Slots for `ids`: those already in one keep it; the others take empty slots first, then those of adapters this pass does not run. */
  private assign(ids: readonly number[]): Map<number, number> {
    const wanted = new Set(ids);
    const free = this.slotIds.map((id, slot) => ({ id, slot })).filter(({ id }) => !wanted.has(id));
    free.sort((a, b) => Number(a.id !== 0) - Number(b.id !== 0));
    for (const id of ids) {
      if (this.slotIds.includes(id)) continue;
      this.slotIds[free.shift()!.slot] = id;
    }
    return new Map(ids.map((id) => [id, this.slotIds.indexOf(id)]));
  }

  /** Throws when `weights` do not fit the base model or the runner's limits. */
  private check(weights: LoraWeights): void {
    const c = this.config;
    if (weights.rank > this.maxRank) throw new Error(`LoRA rank ${weights.rank} is greater than max_lora_rank ${this.maxRank}`);
    if (weights.layers.length !== c.numLayers) throw new Error(`the LoRA adapter has ${weights.layers.length} layers, the model ${c.numLayers}`);
    const shapes = loraModuleShapes(c);
    weights.layers.forEach((layer, l) => {
      for (const [module, pair] of layer) {
        if (!LORA_MODULES.includes(module)) throw new Error(`layer ${l}: ${String(module)} is not a linear LoRA adapts`);
        if (MLP_MODULES.includes(module) && isMoeLayer(c, l)) {
          throw new Error(`layer ${l}: ${module} cannot be adapted: the layer's feed-forward is not a dense MLP (its experts are not adapted)`);
        }
        const [inFeatures, outFeatures] = shapes[module];
        const ok = pair.inFeatures === inFeatures && pair.outFeatures === outFeatures && pair.rank === weights.rank;
        if (!ok || pair.a.length !== pair.rank * inFeatures || pair.b.length !== outFeatures * pair.rank) {
          throw new Error(`layer ${l} ${module}: a LoRA pair of rank ${pair.rank} [${pair.outFeatures} x ${pair.inFeatures}], expected rank ${weights.rank} [${outFeatures} x ${inFeatures}]`);
        }
      }
    });
  }
}

/** [inFeatures, outFeatures] of each adapted linear of the model. */
export function loraModuleShapes(c: DecoderArchConfig): Record<LoraModule, [number, number]> {
  const h = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const inter = c.intermediateSize ?? 0;
  return { q_proj: [h, q], k_proj: [h, kv], v_proj: [h, kv], o_proj: [q, h], gate_proj: [h, inter], up_proj: [h, inter], down_proj: [inter, h] };
}
