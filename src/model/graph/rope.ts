// Rotary embedding tables (cos/sin per position and frequency) for the RotaryEmbedding op,
// including the Hugging Face rope_scaling variants we support: linear, llama3, yarn, longrope
// (phi3) and the explicit per-frequency divisors ('freq_factors') the GGUF loader emits for
// rope_freqs tensors. A partial rotary config (rotaryDim < headDim) has tables rotaryDim/2 wide.
import { attrInt, type AttrValue } from './graph-builder';
import { DecoderArchConfig } from '../types';

interface RopeParameters {
  /** Per-frequency inverse wavelengths after scaling, length headDim/2. */
  inverseFrequencies: Float64Array;
  /** Multiplier on cos/sin (YaRN's attention factor; 1 otherwise). */
  attentionFactor: number;
}

/** The leading dims of each head that RoPE rotates (all of them unless partial). */
export function rotaryDimOf(config: Pick<DecoderArchConfig, 'headDim' | 'rotaryDim'>): number {
  return config.rotaryDim ?? config.headDim;
}

/** com.microsoft RotaryEmbedding's attributes for `heads` heads of `config` (rotary_embedding_dim when partial). */
export function rotaryAttributes(config: Pick<DecoderArchConfig, 'headDim' | 'rotaryDim'>, heads: number): Record<string, AttrValue> {
  const rotary = rotaryDimOf(config);
  return rotary === config.headDim ? { num_heads: attrInt(heads) } : { num_heads: attrInt(heads), rotary_embedding_dim: attrInt(rotary) };
}

/** `maxModelLen`: the server's max_model_len, which picks LongRoPE's table. */
function ropeParameters(config: DecoderArchConfig, maxModelLen: number): RopeParameters {
  const dim = rotaryDimOf(config);
  const inv = new Float64Array(dim / 2);
  for (let i = 0; i < inv.length; i++) inv[i] = 1 / Math.pow(config.ropeTheta, (2 * i) / dim);
  const plain = (inverseFrequencies: Float64Array) => ({ inverseFrequencies, attentionFactor: 1 });
  const scaling = config.ropeScaling;
  if (!scaling) return plain(inv);
  const named = scaling['rope_type'] ?? scaling['type'];
  const type = named == null ? 'default' : typeof named === 'string' ? named : JSON.stringify(named);
  const factor = Number(scaling['factor'] ?? 1);
  if (type === 'default') return plain(inv);
  if (type === 'linear') return plain(inv.map((f) => f / factor));
  if (type === 'llama3') return plain(llama3Scaling(inv, scaling, factor));
  if (type === 'freq_factors') return plain(divideByFactors(inv, scaling['freq_factors']));
  if (type === 'yarn') return yarnScaling(inv, scaling, factor, config);
  if (type === 'longrope') return longRopeScaling(inv, scaling, config, maxModelLen);
  throw new Error(`rope_scaling type '${type}' is not supported (supported: linear, llama3, yarn, longrope, freq_factors)`);
}

/**
 * LongRoPE (phi3): per-frequency divisors, long_factor when the server's max_model_len exceeds
 * original_max_position_embeddings, else short_factor. HF switches per forward by sequence length,
 * which a KV cache cannot (keys already rotated with the other table), so the choice is fixed per
 * server as vLLM (max_model_len) and llama.cpp (context size) fix it. The cos/sin multiplier is
 * attention_factor when given, else sqrt(1 + ln(s) / ln(original)) with s = max_position_embeddings
 * / original (HF's _compute_longrope_parameters; llama.cpp's rope.scaling.attn_factor), for both tables.
 */
function longRopeScaling(inv: Float64Array, scaling: Record<string, unknown>, config: DecoderArchConfig, maxModelLen: number): RopeParameters {
  const original = Number(scaling['original_max_position_embeddings']);
  if (!(original > 0)) throw new Error('rope_scaling longrope needs original_max_position_embeddings');
  const table = maxModelLen > original ? 'long_factor' : 'short_factor';
  const given = scaling['attention_factor'];
  const attentionFactor = typeof given === 'number' ? given : longRopeAttentionFactor(config.maxPositionEmbeddings / original, original);
  return { inverseFrequencies: divideByFactors(inv, scaling[table], `longrope ${table}`), attentionFactor };
}

/** LongRoPE's cos/sin multiplier for a context stretched `stretch` times: sqrt(1 + ln(stretch) / ln(original)), 1 when not stretched. */
export function longRopeAttentionFactor(stretch: number, original: number): number {
  return stretch <= 1 ? 1 : Math.sqrt(1 + Math.log(stretch) / Math.log(original));
}

function divideByFactors(inv: Float64Array, factors: unknown, what = 'freq_factors'): Float64Array {
  if (!Array.isArray(factors) || factors.length !== inv.length) {
    throw new Error(`rope_scaling ${what} must list ${inv.length} divisors`);
  }
  return inv.map((f, i) => f / Number(factors[i]));
}

/** YaRN (as in HF's _compute_yarn_parameters and vLLM): blend interpolated and extrapolated frequencies. */
function yarnScaling(inv: Float64Array, scaling: Record<string, unknown>, factor: number, config: DecoderArchConfig): RopeParameters {
  const dim = rotaryDimOf(config);
  const base = config.ropeTheta;
  const original = Number(scaling['original_max_position_embeddings'] ?? config.maxPositionEmbeddings);
  const betaFast = Number(scaling['beta_fast'] ?? 32);
  const betaSlow = Number(scaling['beta_slow'] ?? 1);
  const mscale = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
  let attentionFactor = scaling['attention_factor'] as number | undefined;
  if (attentionFactor === undefined || attentionFactor === null) {
    const m = scaling['mscale'] as number | undefined;
    const mAll = scaling['mscale_all_dim'] as number | undefined;
    attentionFactor = m && mAll ? mscale(factor, m) / mscale(factor, mAll) : mscale(factor);
  }
  const correctionDim = (rotations: number) => (dim * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
  const truncate = scaling['truncate'] !== false;
  let low = correctionDim(betaFast);
  let high = correctionDim(betaSlow);
  if (truncate) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001;
  const blended = inv.map((extrapolated, i) => {
    const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
    const extrapolationWeight = 1 - ramp;
    return (extrapolated / factor) * (1 - extrapolationWeight) + extrapolated * extrapolationWeight;
  });
  return { inverseFrequencies: blended, attentionFactor };
}

/** HF's llama3 rope scaling of each inverse frequency (the GGUF loader also fits rope_freqs against it). */
export function llama3Scaling(inv: Float64Array, scaling: Record<string, unknown>, factor: number): Float64Array {
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

/**
 * cos and sin tables, each [maxPositions, rotaryDim/2] row-major. `maxModelLen` (the server's
 * max_model_len; default maxPositions) picks LongRoPE's table.
 */
export function ropeTables(config: DecoderArchConfig, maxPositions: number, maxModelLen = maxPositions): { cos: Float32Array; sin: Float32Array } {
  const { inverseFrequencies: inv, attentionFactor } = ropeParameters(config, maxModelLen);
  const half = inv.length;
  const cos = new Float32Array(maxPositions * half);
  const sin = new Float32Array(maxPositions * half);
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      // float32 angle, as Hugging Face computes it (inv_freq and positions are float32 there)
      const angle = Math.fround(p * Math.fround(inv[i]));
      cos[p * half + i] = Math.cos(angle) * attentionFactor;
      sin[p * half + i] = Math.sin(angle) * attentionFactor;
    }
  }
  return { cos, sin };
}
