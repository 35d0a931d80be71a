// What the gemma descriptors and their HF and GGUF readers share: the family's traits, which
// layers slide, the per-layer RoPE and the fields every gemma config has.
import type { DecoderArchConfig, RopeSetting } from '../types';
import type { Json } from './hf-json';

export type LayerType = 'full_attention' | 'sliding_attention';

export interface GemmaTraits {
  name: string;
  modelTypes: readonly string[];
  ggufArchitecture: string;
  /** Per-head RMSNorm of q and k before RoPE (gemma3). */
  qkNorm: boolean;
  /** The transformers config class's defaults, for keys a config.json leaves out. */
  hfDefaults: Json;
  /** Layer i slides unless (i + 1) % n === 0 when nothing lists the layer types (llama.cpp's default pattern: gemma3 6, gemma2 2). */
  swaPattern: number;
  /** Sliding layers keep the global RoPE scaling (gemma2: one RoPE for all) rather than none (gemma3). */
  localRopeScaled: boolean;
  /** What llama.cpp assumes when a GGUF lacks the key (gemma2: 4096; gemma3: no window). */
  ggufDefaultWindow: number;
  /**
   * llama.cpp's soft-caps when a GGUF lacks the keys: a number (gemma2 always caps, 50 / 30), 0
   * for none, null where llama.cpp never applies one (gemma3's attention).
   */
  ggufSoftcaps: { attention: number | null; final: number | null };
  /** llama.cpp's default local RoPE base when a GGUF lacks rope.freq_base_swa: null = the global base. */
  ggufDefaultLocalTheta: number | null;
  /** llama.cpp types a gemma model by its layer count and scales the 27B's queries by hidden/heads. */
  ggufWideScaleLayers: number;
}

/** Which layers slide: layer_types when listed, else the family's pattern (every n-th layer global). */
export function layerTypesOf(listed: unknown, numLayers: number, pattern: number, source: string): LayerType[] {
  if (Array.isArray(listed)) {
    if (listed.length !== numLayers || !listed.every((t) => t === 'full_attention' || t === 'sliding_attention')) {
      throw new Error(`${source}: layer_types must list 'full_attention' or 'sliding_attention' for each of the ${numLayers} layers`);
    }
    return listed as LayerType[];
  }
  return Array.from({ length: numLayers }, (_, i) => (pattern > 0 && (i + 1) % pattern === 0 ? 'full_attention' : 'sliding_attention'));
}

function sameRope(a: RopeSetting, b: RopeSetting): boolean {
  return a.ropeTheta === b.ropeTheta && JSON.stringify(a.ropeScaling) === JSON.stringify(b.ropeScaling);
}

/** Per layer its RoPE when it differs from the global one (the sliding layers' local base), else absent. */
export function layerRope(types: readonly LayerType[], global: RopeSetting, local: RopeSetting): (RopeSetting | null)[] | undefined {
  if (sameRope(global, local) || !types.includes('sliding_attention')) return undefined;
  return types.map((t) => (t === 'sliding_attention' ? local : null));
}

/** A config value that is a number > 0, else undefined (null, 0 or absent: the feature is off). */
export function positive(value: unknown): number | undefined {
  return typeof value === 'number' && value > 0 ? value : undefined;
}

/** The fields every gemma config has, from the family's traits. */
export function gemmaLayout(traits: GemmaTraits): Pick<DecoderArchConfig, 'architecture' | 'attentionBias' | 'qkNorm' | 'sandwichNorms' | 'hiddenActivation'> {
  return { architecture: traits.name, attentionBias: false, qkNorm: traits.qkNorm || undefined, sandwichNorms: true, hiddenActivation: 'gelu_tanh' };
}
