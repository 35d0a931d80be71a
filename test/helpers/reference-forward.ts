// An independent, deliberately plain reference forward pass of a llama/qwen2 decoder, for
// checking the ONNX graph. Straightforward loops in float64 accumulators; slow is fine.
import { dequantize } from '../../src/model/gguf/dequant';
import { DecoderArchConfig, ModelArchConfig, ModelWeights } from '../../src/model/types';

export function weight(weights: ModelWeights, name: string): Float32Array {
  const t = weights.get(name);
  if (t.kind === 'f32') return t.data;
  return dequantize(t.format, t.data, t.shape.reduce((a, b) => a * b, 1));
}

/** y = W x (+ b) with W [out, in] row-major. */
export function matVec(w: Float32Array, x: Float64Array, out: number, bias?: Float32Array): Float64Array {
  const inp = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let sum = bias ? bias[o] : 0;
    const row = o * inp;
    for (let i = 0; i < inp; i++) sum += w[row + i] * x[i];
    y[o] = sum;
  }
  return y;
}

export function rmsNorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * inv * w[i]);
}

/**
 * Inverse frequencies and cos/sin multiplier after HF rope_scaling ('linear' divides all; 'llama3'
 * only the long wavelengths; 'freq_factors' per frequency; 'yarn' ramps between divided and not).
 */
function ropeScaling(c: DecoderArchConfig): { freqs: number[]; gain: number } {
  const freqs: number[] = [];
  for (let i = 0; i < c.headDim; i += 2) freqs.push(Math.pow(c.ropeTheta, -i / c.headDim));
  const s = c.ropeScaling;
  const kind = s ? ((s['rope_type'] ?? s['type']) as string) : 'default';
  if (kind === 'yarn') return yarn(c, freqs);
  return { freqs: scaledFrequencies(c, freqs, kind), gain: 1 };
}

function yarn(c: DecoderArchConfig, freqs: number[]): { freqs: number[]; gain: number } {
  const s = c.ropeScaling!;
  const factor = s['factor'] as number;
  const original = (s['original_max_position_embeddings'] as number) ?? c.maxPositionEmbeddings;
  // dimension index (0..headDim) at which a frequency completes `turns` rotations over the original context
  const dimFor = (turns: number) => (c.headDim * Math.log(original / (turns * 2 * Math.PI))) / (2 * Math.log(c.ropeTheta));
  const lo = Math.max(0, Math.floor(dimFor((s['beta_fast'] as number) ?? 32)));
  let hi = Math.min(c.headDim - 1, Math.ceil(dimFor((s['beta_slow'] as number) ?? 1)));
  if (hi === lo) hi += 0.001;
  const out = freqs.map((f, i) => {
    const t = Math.min(1, Math.max(0, (i - lo) / (hi - lo))); // 0: keep f (high freq), 1: f / factor
    return f * (1 - t) + (f / factor) * t;
  });
  return { freqs: out, gain: factor > 1 ? 1 + 0.1 * Math.log(factor) : 1 };
}

function scaledFrequencies(c: DecoderArchConfig, freqs: number[], kind: string): number[] {
  const s = c.ropeScaling;
  if (!s || kind === 'default') return freqs;
  const factor = s['factor'] as number;
  if (kind === 'freq_factors') return freqs.map((f, i) => f / (s['freq_factors'] as number[])[i]);
  if (kind === 'linear') return freqs.map((f) => f / factor);
  if (kind === 'llama3') {
    const lowFactor = s['low_freq_factor'] as number;
    const highFactor = s['high_freq_factor'] as number;
    const oldContext = s['original_max_position_embeddings'] as number;
    return freqs.map((f) => {
      const wavelength = (2 * Math.PI) / f;
      if (wavelength < oldContext / highFactor) return f;
      if (wavelength > oldContext / lowFactor) return f / factor;
      const t = (oldContext / wavelength - lowFactor) / (highFactor - lowFactor);
      return (1 - t) * (f / factor) + t * f;
    });
  }
  throw new Error(`reference: rope type ${kind}`);
}

/** Rotate-half RoPE on each head of `x` (heads × headDim) at `position` (per frequency index where a function), in place. */
function rope(x: Float64Array, heads: number, headDim: number, position: number | ((freq: number) => number), { freqs, gain }: { freqs: number[]; gain: number }): void {
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      const a = x[h * headDim + i];
      const b = x[h * headDim + i + half];
      const angle = (typeof position === 'number' ? position : position(i)) * freqs[i];
      x[h * headDim + i] = gain * (a * Math.cos(angle) - b * Math.sin(angle));
      x[h * headDim + i + half] = gain * (b * Math.cos(angle) + a * Math.sin(angle));
    }
  }
}

/**
 * Logits [tokens.length][vocab] of a full causal forward pass over `tokens` from position 0.
 * `config`: a llama/qwen2 config (a loaded model's config is typed as the base).
 */
export function referenceForward(
  modelConfig: ModelArchConfig,
  weights: ModelWeights,
  tokens: readonly number[],
  ffn?: ReferenceFeedForward,
  inputRows?: InputRows,
  ropePositions?: Int32Array,
): Float32Array[] {
  const c = modelConfig as DecoderArchConfig;
  const embed = weight(weights, 'model.embed_tokens.weight');
  const head = !c.tieWordEmbeddings && weights.has('lm_head.weight') ? weight(weights, 'lm_head.weight') : embed;
  return referenceHiddenStates(c, weights, tokens, ffn, inputRows, ropePositions).map((hidden) => Float32Array.from(matVec(head, hidden, c.vocabSize)));
}

/**
 * A layer's feed-forward block in place of the dense SwiGLU MLP (reference-moe.ts's experts):
 * the block's output for the post-attention-normed row `x` of layer `layer`, or null where the
 * layer keeps its dense MLP.
 */
export type ReferenceFeedForward = (layer: number, x: Float64Array) => Float64Array | null;

/** Positions whose input is the given vector instead of their token's embedding (image rows). */
export type InputRows = ReadonlyMap<number, ArrayLike<number>>;

/**
 * The final (RMS-normed) hidden state of every position of a causal forward pass over `tokens`.
 * `ropePositions` ([3 * tokens]: t..., h..., w...) rotates by M-RoPE: frequency i takes the axis
 * whose section of config.mropeSection holds it (transformers' apply_multimodal_rotary_pos_emb).
 */
export function referenceHiddenStates(
  modelConfig: ModelArchConfig,
  weights: ModelWeights,
  tokens: readonly number[],
  ffn?: ReferenceFeedForward,
  inputRows?: InputRows,
  ropePositions?: Int32Array,
): Float64Array[] {
  const c = modelConfig as DecoderArchConfig;
  const n = tokens.length;
  const axisOf = (freq: number) => (freq < c.mropeSection![0] ? 0 : freq < c.mropeSection![0] + c.mropeSection![1] ? 1 : 2);
  const positionOf = (pos: number) => (ropePositions ? (freq: number) => ropePositions[axisOf(freq) * n + pos] : pos);
  const hd = c.headDim;
  const group = c.numHeads / c.numKvHeads;
  const embed = weight(weights, 'model.embed_tokens.weight');
  const layers = Array.from({ length: c.numLayers }, (_, l) => {
    const p = `model.layers.${l}.`;
    const w = (n: string) => weight(weights, p + n);
    const bias = (n: string) => (c.attentionBias ? w(`self_attn.${n}.bias`) : undefined);
    return {
      inNorm: w('input_layernorm.weight'),
      postNorm: w('post_attention_layernorm.weight'),
      q: w('self_attn.q_proj.weight'),
      k: w('self_attn.k_proj.weight'),
      v: w('self_attn.v_proj.weight'),
      qb: bias('q_proj'),
      kb: bias('k_proj'),
      vb: bias('v_proj'),
      o: w('self_attn.o_proj.weight'),
      // Read when the layer has a dense MLP (a MoE layer has experts instead).
      gate: weights.has(`${p}mlp.gate_proj.weight`) ? w('mlp.gate_proj.weight') : new Float32Array(0),
      up: weights.has(`${p}mlp.up_proj.weight`) ? w('mlp.up_proj.weight') : new Float32Array(0),
      down: weights.has(`${p}mlp.down_proj.weight`) ? w('mlp.down_proj.weight') : new Float32Array(0),
      ...layerExtras(c, weights, l),
      keys: [] as Float64Array[],
      values: [] as Float64Array[],
    };
  });
  const finalNorm = weight(weights, 'model.norm.weight');

  return tokens.map((token, pos) => {
    const given = inputRows?.get(pos);
    let x = given ? Float64Array.from(given) : Float64Array.from(embed.subarray(token * c.hiddenSize, (token + 1) * c.hiddenSize));
    for (const [l, L] of layers.entries()) {
      const xn = rmsNorm(x, L.inNorm, c.rmsNormEps);
      const q = matVec(L.q, xn, c.numHeads * hd, L.qb);
      const k = matVec(L.k, xn, c.numKvHeads * hd, L.kb);
      const v = matVec(L.v, xn, c.numKvHeads * hd, L.vb);
      if (L.qNorm && L.kNorm) {
        headRmsNorm(q, L.qNorm, c.rmsNormEps);
        headRmsNorm(k, L.kNorm, c.rmsNormEps);
      }
      rope(q, c.numHeads, hd, positionOf(pos), L.freqs);
      rope(k, c.numKvHeads, hd, positionOf(pos), L.freqs);
      L.keys.push(k);
      L.values.push(v);
      const attn = new Float64Array(c.numHeads * hd);
      for (let h = 0; h < c.numHeads; h++) {
        const kvh = Math.floor(h / group);
        // Positions outside the layer's window score -Infinity (weight 0).
        const scores = L.keys.map((kk, t) => {
          if (L.window > 0 && t <= pos - L.window) return -Infinity;
          let dot = 0;
          for (let d = 0; d < hd; d++) dot += q[h * hd + d] * kk[kvh * hd + d];
          return dot * L.scale;
        });
        const max = Math.max(...scores);
        const exps = scores.map((s) => Math.exp(s - max));
        const total = exps.reduce((a, b) => a + b, 0);
        L.values.forEach((vv, t) => {
          for (let d = 0; d < hd; d++) attn[h * hd + d] += (exps[t] / total) * vv[kvh * hd + d];
        });
      }
      const o = matVec(L.o, attn, c.hiddenSize);
      x = x.map((val, i) => val + o[i]);
      const xn2 = rmsNorm(x, L.postNorm, c.rmsNormEps);
      const down = ffn?.(l, xn2) ?? swiglu(L.gate, L.up, L.down, xn2, c.intermediateSize);
      x = x.map((val, i) => val + down[i]);
    }
    return rmsNorm(x, finalNorm, c.rmsNormEps);
  });
}

/** down(silu(gate x) * up x) with [out, in] weights: the dense MLP, and one expert of a MoE block. */
export function swiglu(gateW: Float32Array, upW: Float32Array, downW: Float32Array, x: Float64Array, width: number): Float64Array {
  const gate = matVec(gateW, x, width);
  const up = matVec(upW, x, width);
  const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]);
  return matVec(downW, act, downW.length / width);
}

// ---- Per-layer options (q/k norm, sliding window, attention scale, per-layer RoPE), read from
// the config's optional fields as HF's Qwen3 / Mistral / Gemma3 attention applies them.

interface LayerExtras {
  freqs: { freqs: number[]; gain: number };
  /** Keys a query sees back, itself included (0: all). */
  window: number;
  scale: number;
  qNorm?: Float32Array;
  kNorm?: Float32Array;
}

function layerExtras(c: DecoderArchConfig, weights: ModelWeights, l: number): LayerExtras {
  const p = `model.layers.${l}.self_attn.`;
  const own = c.layerRope?.[l];
  const type = c.layerTypes?.[l] ?? 'sliding_attention';
  return {
    freqs: ropeScaling(own ? { ...c, ...own } : c),
    window: (c.slidingWindow ?? 0) > 0 && type === 'sliding_attention' ? c.slidingWindow! : 0,
    scale: c.attentionScale ?? 1 / Math.sqrt(c.headDim),
    qNorm: c.qkNorm ? weight(weights, `${p}q_norm.weight`) : undefined,
    kNorm: c.qkNorm ? weight(weights, `${p}k_norm.weight`) : undefined,
  };
}

/** RMSNorm of each head (w's width) of x, in place. */
function headRmsNorm(x: Float64Array, w: Float32Array, eps: number): void {
  for (let at = 0; at < x.length; at += w.length) x.set(rmsNorm(x.subarray(at, at + w.length), w, eps), at);
}
