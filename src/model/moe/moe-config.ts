// Mixture-of-experts layers (mixtral, qwen3moe) in the canonical form every loader maps onto:
// per MoE layer a router `mlp.gate.weight` [experts, hidden] and the experts' three projections
// stacked into one tensor each, `mlp.experts.{gate,up,down}_proj.weight` [experts, out, in] (the
// GGUF `ffn_*_exps` layout). HF checkpoints store one tensor per expert: their names map onto
// `mlp.experts.{e}.*_proj.weight` and the loader stacks them (expertStackOf).
import type { DecoderArchConfig } from '../types';

/** The fields of DecoderArchConfig this file reads. */
type MoeShape = Pick<DecoderArchConfig, 'numExperts' | 'numExpertsPerToken' | 'expertIntermediateSize' | 'denseLayers' | 'intermediateSize' | 'hiddenSize'>;

/** The three stacked expert projections, in canonical order (gate, up, down). */
export const EXPERT_PROJECTIONS = ['gate_proj', 'up_proj', 'down_proj'] as const;

/** True when layer `l` routes its tokens to experts (the config has experts and the layer is not a dense one). */
export function isMoeLayer(c: Pick<DecoderArchConfig, 'numExperts' | 'denseLayers'>, l: number): boolean {
  return (c.numExperts ?? 0) > 0 && !(c.denseLayers ?? []).includes(l);
}

/** True when any layer is a MoE layer. */
export function hasMoeLayers(c: Pick<DecoderArchConfig, 'numExperts' | 'denseLayers' | 'numLayers'>): boolean {
  for (let l = 0; l < c.numLayers; l++) if (isMoeLayer(c, l)) return true;
  return false;
}

/** The canonical names of layer `l`'s MoE weights (prefix `model.layers.{l}.`). */
export function moeWeightNames(prefix: string): { router: string; gate: string; up: string; down: string } {
  return {
    router: `${prefix}mlp.gate.weight`,
    gate: `${prefix}mlp.experts.gate_proj.weight`,
    up: `${prefix}mlp.experts.up_proj.weight`,
    down: `${prefix}mlp.experts.down_proj.weight`,
  };
}

/** Layer `prefix`'s MoE weights with their shapes ([experts, out, in] for the stacks). */
export function moeWeightShapes(c: MoeShape, prefix: string): Array<{ name: string; shape: number[] }> {
  const e = c.numExperts!;
  const ffn = c.expertIntermediateSize!;
  const h = c.hiddenSize;
  const names = moeWeightNames(prefix);
  return [
    { name: names.router, shape: [e, h] },
    { name: names.gate, shape: [e, ffn, h] },
    { name: names.up, shape: [e, ffn, h] },
    { name: names.down, shape: [e, h, ffn] },
  ];
}

/** Checks a MoE config's numbers; throws naming the source and the field. */
export function checkMoeConfig(c: MoeShape, source: string): void {
  if (!c.numExperts) return;
  const k = c.numExpertsPerToken;
  if (!Number.isInteger(k) || k! < 1 || k! > c.numExperts) {
    throw new Error(`${source}: ${c.numExperts} experts with ${k} experts per token (needs 1..${c.numExperts})`);
  }
  if (!Number.isInteger(c.expertIntermediateSize) || c.expertIntermediateSize! < 1) throw new Error(`${source}: expert FFN width ${c.expertIntermediateSize} is not a positive integer`);
}

type Json = Record<string, unknown>;

/**
 * The MoE fields of a config.json: mixtral's num_local_experts, qwen3moe's num_experts with
 * moe_intermediate_size, norm_topk_prob (absent: `normTopKDefault`, as each family's config
 * class defaults), decoder_sparse_step and mlp_only_layers (a layer l is sparse when it is not
 * listed and (l + 1) % step == 0, as Qwen3MoeDecoderLayer decides).
 */
export function moeHfFields(json: Json, numLayers: number, intermediateSize: number, normTopKDefault: boolean): Partial<DecoderArchConfig> {
  const experts = json.num_local_experts ?? json.num_experts;
  if (typeof experts !== 'number' || experts <= 0) return {};
  const step = typeof json.decoder_sparse_step === 'number' && json.decoder_sparse_step > 0 ? json.decoder_sparse_step : 1;
  const mlpOnly = Array.isArray(json.mlp_only_layers) ? json.mlp_only_layers.filter((l): l is number => typeof l === 'number') : [];
  const denseLayers: number[] = [];
  for (let l = 0; l < numLayers; l++) if (mlpOnly.includes(l) || (l + 1) % step !== 0) denseLayers.push(l);
  return {
    numExperts: experts,
    numExpertsPerToken: typeof json.num_experts_per_tok === 'number' ? json.num_experts_per_tok : undefined,
    expertIntermediateSize: typeof json.moe_intermediate_size === 'number' ? json.moe_intermediate_size : intermediateSize,
    normTopKProb: typeof json.norm_topk_prob === 'boolean' ? json.norm_topk_prob : normTopKDefault,
    ...(denseLayers.length > 0 ? { denseLayers } : {}),
  };
}

/** Mixtral's stored names (block_sparse_moe: gate = router, experts.{e}.w1 gate, w3 up, w2 down) -> canonical per-expert names. */
const MIXTRAL_NAMES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\.block_sparse_moe\.gate\.weight$/, '.mlp.gate.weight'],
  [/\.block_sparse_moe\.experts\.(\d+)\.w1\.weight$/, '.mlp.experts.$1.gate_proj.weight'],
  [/\.block_sparse_moe\.experts\.(\d+)\.w3\.weight$/, '.mlp.experts.$1.up_proj.weight'],
  [/\.block_sparse_moe\.experts\.(\d+)\.w2\.weight$/, '.mlp.experts.$1.down_proj.weight'],
];

/** A stored HF tensor name with mixtral's MoE names mapped onto the canonical ones (others unchanged). */
export function canonicalMoeName(stored: string): string {
  for (const [pattern, replacement] of MIXTRAL_NAMES) if (pattern.test(stored)) return stored.replace(pattern, replacement);
  return stored;
}

const PER_EXPERT = /^(model\.layers\.\d+\.mlp\.experts)\.(\d+)\.((?:gate|up|down)_proj\.weight)$/;

/** For one expert's tensor (`…mlp.experts.{e}.up_proj.weight`), the stack it belongs to and its index there; null otherwise. */
export function expertStackOf(name: string): { stacked: string; index: number } | null {
  const m = PER_EXPERT.exec(name);
  return m ? { stacked: `${m[1]}.${m[3]}`, index: Number(m[2]) } : null;
}
