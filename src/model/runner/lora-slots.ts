// The segmented runner's LoRA adapters (ModelRunner.loras): one copy of each adapter, shared by
// every sequence naming it, and the maxLoras slots a pass's adapters occupy. An adapter keeps its
// slot from step to step while it runs, so a backend that copies adapters into per-slot arrays
// (onnx-segments) copies one again only when its slot changes hands.
import { isMoeLayer } from '../moe/moe-config';
import { baseLinearShape, isMlpModule } from '../lora/base-linears';
import { LORA_MODULES, type LoraWeights } from '../lora/lora-weights';
import type { DecoderArchConfig, RunnerLoras, StepSequence } from '../types';
import type { PassLora } from './backends/decoder-backend';

export class LoraSlots implements RunnerLoras {
  private readonly adapters = new Map<number, LoraWeights>();
  /** The adapter id in each slot (0: empty). */
  private readonly slotIds: number[];
  /** When each slot last ran (a pass counter): the least recently used gives way first. */
  private readonly lastUsed: number[];
  private passes = 0;

  constructor(
    private readonly config: DecoderArchConfig,
    readonly maxLoras: number,
    private readonly maxRank: number,
  ) {
    if (!Number.isInteger(maxLoras) || maxLoras < 1) throw new Error(`maxLoras must be a positive integer, got ${maxLoras}`);
    if (!Number.isInteger(maxRank) || maxRank < 1) throw new Error(`maxRank must be a positive integer, got ${maxRank}`);
    this.slotIds = new Array<number>(maxLoras).fill(0);
    this.lastUsed = new Array<number>(maxLoras).fill(0);
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

  /** The distinct adapters `batch` (a step, or a pass of it) names; throws when they are more than maxLoras or one is not held. */
  checkStep(batch: readonly StepSequence[]): number[] {
    const ids = [...new Set(batch.map((s) => s.lora ?? 0).filter((id) => id !== 0))];
    if (ids.length > this.maxLoras) throw new Error(`a step names ${ids.length} LoRA adapters, more than max_loras (${this.maxLoras})`);
    const unknown = ids.find((id) => !this.adapters.has(id));
    if (unknown !== undefined) throw new Error(`LoRA adapter ${unknown} is not loaded in the runner`);
    return ids;
  }

  /** The pass's adapters in their slots and each row's slot, or undefined when no sequence of `batch` names one. */
  passLora(batch: readonly StepSequence[]): PassLora | undefined {
    const ids = this.checkStep(batch);
    if (ids.length === 0) return undefined;
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

  /**
   * Slots for `ids`: those already in one keep it; the others take the lowest empty slot (a short
   * prefix for onnx-segments' stacks), then the least recently run adapter's slot.
   */
  private assign(ids: readonly number[]): Map<number, number> {
    const wanted = new Set(ids);
    const free = this.slotIds.map((id, slot) => ({ id, slot })).filter(({ id }) => !wanted.has(id));
    const rank = (f: { id: number; slot: number }) => (f.id === 0 ? -1 : this.lastUsed[f.slot]);
    free.sort((a, b) => rank(a) - rank(b) || a.slot - b.slot);
    for (const id of ids) {
      if (this.slotIds.includes(id)) continue;
      this.slotIds[free.shift()!.slot] = id;
    }
    this.passes++;
    const slots = new Map(ids.map((id) => [id, this.slotIds.indexOf(id)]));
    for (const slot of slots.values()) this.lastUsed[slot] = this.passes;
    return slots;
  }

  /** Throws when `weights` do not fit the base model or the runner's limits. */
  private check(weights: LoraWeights): void {
    const c = this.config;
    if (weights.rank > this.maxRank) throw new Error(`LoRA rank ${weights.rank} is greater than max_lora_rank ${this.maxRank}`);
    if (weights.layers.length !== c.numLayers) throw new Error(`the LoRA adapter has ${weights.layers.length} layers, the model ${c.numLayers}`);
    weights.layers.forEach((layer, l) => {
      for (const [module, pair] of layer) {
        if (!LORA_MODULES.includes(module)) throw new Error(`layer ${l}: ${String(module)} is not a linear LoRA adapts`);
        // A MoE layer (gpt-oss's feed-forward block too) has no dense MLP linears.
        if (isMlpModule(module) && isMoeLayer(c, l)) {
          throw new Error(`layer ${l}: ${module} cannot be adapted: the layer's feed-forward is not a dense MLP (its experts are not adapted)`);
        }
        const { inFeatures, outFeatures } = baseLinearShape(c, module);
        // A pair's own rank may differ from the adapter's (PEFT's rank_pattern): each backend reads pair.rank.
        const ok = pair.inFeatures === inFeatures && pair.outFeatures === outFeatures && Number.isInteger(pair.rank) && pair.rank >= 1 && pair.rank <= this.maxRank;
        if (!ok || pair.a.length !== pair.rank * inFeatures || pair.b.length !== outFeatures * pair.rank) {
          throw new Error(`layer ${l} ${module}: a LoRA pair of rank ${pair.rank} [${pair.outFeatures} x ${pair.inFeatures}], expected rank 1..${this.maxRank} [${outFeatures} x ${inFeatures}]`);
        }
      }
    });
  }
}
