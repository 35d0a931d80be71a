// Turns the A/B pairs an adapter file stores (either format) into LoraWeights: checks each pair
// against the base model's linears, splits fused projections, folds the scaling into B and rounds
// to --lora-dtype. Both readers (peft-adapter.ts, gguf-adapter.ts) end here, so both check alike.
import { bf16BytesToF32, f16BytesToF32 } from '../gguf/half';
import { encodeBF16, encodeF16 } from '../gguf/quantize';
import type { DecoderArchConfig } from '../types';
import { baseLinearShape, checkBaseHasLinear, fusedParts } from './base-linears';
import { LORA_MODULES, LoraLoadError, type LoraLimits, type LoraModule, type LoraPair, type LoraWeights } from './lora-weights';

/** One adapted linear as a file stores it (B not yet scaled). */
export interface StoredLoraPair {
  layer: number;
  /** A canonical module name, or a fused one (qkv_proj, gate_up_proj) that is split here. */
  module: string;
  /** A, [aShape[0] = rank, aShape[1] = in] row-major. */
  a: Float32Array;
  aShape: readonly number[];
  /** B, [bShape[0] = out, bShape[1] = rank] row-major. */
  b: Float32Array;
  bShape: readonly number[];
  /** How the file names the pair, for messages. */
  name: string;
}

export interface AdapterScale {
  rank: number;
  alpha: number;
  scaling: number;
}

/** vLLM's check (and message) of an adapter's rank against --max-lora-rank. */
export function checkLoraRank(rank: number, limits: LoraLimits, source: string): void {
  if (!Number.isInteger(rank) || rank <= 0) throw new LoraLoadError(`${source}: LoRA rank ${rank} is not a positive integer`);
  if (rank > limits.maxRank) throw new LoraLoadError(`LoRA rank ${rank} is greater than max_lora_rank ${limits.maxRank}.`);
}

export function assembleLoraWeights(stored: readonly StoredLoraPair[], scale: AdapterScale, base: DecoderArchConfig, limits: LoraLimits, source: string): LoraWeights {
  checkLoraRank(scale.rank, limits, source);
  if (stored.length === 0) throw new LoraLoadError(`${source}: the adapter has no LoRA weights`);
  const layers = Array.from({ length: base.numLayers }, () => new Map<LoraModule, LoraPair>());
  const round = rounder(limits.dtype);
  let floats = 0;
  for (const pair of stored) {
    for (const [module, rows, b] of splitPair(pair, base, source)) {
      checkBaseHasLinear(base, pair.layer, module, `${source}: ${pair.name}`);
      const shape = baseLinearShape(base, module);
      checkShapes(pair, rows, shape, scale.rank, source);
      const map = layers[pair.layer];
      if (map.has(module)) throw new LoraLoadError(`${source}: layer ${pair.layer} ${module} is adapted twice (${pair.name})`);
      const scaled = new Float32Array(b.length);
      for (let i = 0; i < b.length; i++) scaled[i] = b[i] * scale.scaling;
      map.set(module, { a: round(pair.a), b: round(scaled), rank: scale.rank, inFeatures: shape.inFeatures, outFeatures: shape.outFeatures });
      floats += pair.a.length + b.length;
    }
  }
  return { rank: scale.rank, alpha: scale.alpha, scaling: scale.scaling, layers, bytes: floats * 4 };
}

/** [module, output rows, B rows] of each canonical linear a stored pair adapts (A is shared by the parts of a fused one). */
function splitPair(pair: StoredLoraPair, base: DecoderArchConfig, source: string): Array<[LoraModule, number, Float32Array]> {
  if ((LORA_MODULES as readonly string[]).includes(pair.module)) return [[pair.module as LoraModule, pair.bShape[0], pair.b]];
  const parts = fusedParts(base, pair.module);
  if (!parts) throw new LoraLoadError(unsupportedModuleMessage(pair, source));
  const total = parts.reduce((sum, [, rows]) => sum + rows, 0);
  if (pair.bShape[0] !== total) {
    throw new LoraLoadError(`${source}: ${pair.name}: B has ${pair.bShape[0]} rows, the base model's ${pair.module} has ${total} (${parts.map(([m, r]) => `${m} ${r}`).join(' + ')})`);
  }
  const rank = pair.bShape[1];
  let row = 0;
  return parts.map(([module, rows]) => {
    const b = pair.b.subarray(row * rank, (row + rows) * rank);
    row += rows;
    return [module, rows, b];
  });
}

function unsupportedModuleMessage(pair: StoredLoraPair, source: string): string {
  if (/embed_tokens|lm_head|token_embd|output/.test(pair.module)) {
    return `${source}: ${pair.name} adapts ${pair.module}; LoRA on the embeddings or the LM head (vLLM's extra vocabulary) is not supported`;
  }
  const expected = [...LORA_MODULES, 'qkv_proj', 'gate_up_proj'].join(', ');
  return `${source}: expected target modules in [${expected}] but received [${pair.module}] (${pair.name}). Please verify that the loaded LoRA module is correct`;
}

function checkShapes(pair: StoredLoraPair, outRows: number, shape: { inFeatures: number; outFeatures: number }, rank: number, source: string): void {
  const [aRank, aIn] = pair.aShape;
  const bRank = pair.bShape[1];
  if (pair.aShape.length !== 2 || pair.bShape.length !== 2) throw new LoraLoadError(`${source}: ${pair.name}: A and B must be matrices`);
  if (aRank !== rank || bRank !== rank) {
    throw new LoraLoadError(`${source}: ${pair.name}: A is [${pair.aShape.join(', ')}] and B [${pair.bShape.join(', ')}], expected rank ${rank} (A [${rank}, in], B [out, ${rank}])`);
  }
  if (aIn !== shape.inFeatures || outRows !== shape.outFeatures) {
    throw new LoraLoadError(
      `${source}: ${pair.name}: adapts a [${outRows}, ${aIn}] linear, but the base model's is [${shape.outFeatures}, ${shape.inFeatures}] (out, in); is this adapter for another base model?`,
    );
  }
}

/** --lora-dtype: the pairs rounded to that type and held as float32. 'auto' keeps float32: DecoderArchConfig carries no checkpoint dtype. */
function rounder(dtype: LoraLimits['dtype']): (values: Float32Array) => Float32Array {
  if (dtype === 'float16') return (v) => f16BytesToF32(encodeF16(v), v.length);
  if (dtype === 'bfloat16') return (v) => bf16BytesToF32(encodeBF16(v), v.length);
  return (v) => v;
}
