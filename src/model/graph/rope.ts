// Rotary embedding tables (cos/sin per position and frequency) for the RotaryEmbedding op,
// including the Hugging Face rope_scaling variants we support (linear, llama3).
import { ModelArchConfig } from '../types';

/** Per-frequency inverse wavelengths, after rope_scaling. Length rotaryDim/2. */
export function ropeInverseFrequencies(config: ModelArchConfig): Float64Array {
  const dim = config.headDim;
  const inv = new Float64Array(dim / 2);
  for (let i = 0; i < inv.length; i++) inv[i] = 1 / Math.pow(config.ropeTheta, (2 * i) / dim);
  const scaling = config.ropeScaling;
  if (!scaling) return inv;
  const type = String(scaling['rope_type'] ?? scaling['type'] ?? 'default');
  const factor = Number(scaling['factor'] ?? 1);
  if (type === 'default') return inv;
  if (type === 'linear') return inv.map((f) => f / factor);
  if (type === 'llama3') return llama3Scaling(inv, scaling, factor);
  throw new Error(`rope_scaling type '${type}' is not supported (supported: linear, llama3)`);
}

function llama3Scaling(inv: Float64Array, scaling: Record<string, unknown>, factor: number): Float64Array {
  const low = Number(scaling['low_freq_factor'] ?? 1);
  const high = Number(scaling['high_freq_factor'] ?? 4);
  const originalContext = Number(scaling['original_max_position_embeddings'] ?? 8192);
  const lowFreqWavelen = originalContext / low;
  const highFreqWavelen = originalContext / high;
  return inv.map((f) => {
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < highFreqWavelen) return f;
    if (wavelen > lowFreqWavelen) return f / factor;
    const smooth = (originalContext / wavelen - low) / (high - low);
    return (1 - smooth) * (f / factor) + smooth * f;
  });
}

/** cos and sin tables, each [maxPositions, headDim/2] row-major. */
export function ropeTables(config: ModelArchConfig, maxPositions: number): { cos: Float32Array; sin: Float32Array } {
  const inv = ropeInverseFrequencies(config);
  const half = inv.length;
  const cos = new Float32Array(maxPositions * half);
  const sin = new Float32Array(maxPositions * half);
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      // float32 angle, as Hugging Face computes it (inv_freq and positions are float32 there)
      const angle = Math.fround(p * Math.fround(inv[i]));
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}
