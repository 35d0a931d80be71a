// An independent, deliberately plain reference forward pass of Whisper (transformers'
// WhisperModel, eval mode) in float64: conv1d, exact (erf) GELU, LayerNorm, softmax attention.
// No KV cache: the decoder recomputes the whole token sequence. Slow is fine.

import type { ModelWeights } from '../../src/model/types';
import type { TinyWhisperShape } from './write-whisper-dir';

type Mat = Float64Array[]; // rows

function w(weights: ModelWeights, name: string): Float32Array {
  const t = weights.get(name);
  if (t.kind !== 'f32') throw new Error(`${name} is quantized`);
  return t.data;
}

/** erf: its Maclaurin series below 3 (exact to ~1e-13 there), Abramowitz & Stegun 7.1.26 (1.5e-7) above. */
function erf(x: number): number {
  const a = Math.abs(x);
  if (a >= 3) {
    const t = 1 / (1 + 0.3275911 * a);
    const poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
    return Math.sign(x) * (1 - poly * Math.exp(-a * a));
  }
  let sum = 0;
  let term = x;
  for (let n = 0; n < 100 && Math.abs(term) > 1e-17; n++) {
    sum += term / (2 * n + 1);
    term *= (-x * x) / (n + 1);
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}

/** Exact (erf) GELU; the linear, norm and attention below are shared with reference-vision.ts. */
export const gelu = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));

export function linear(x: Mat, weight: Float32Array, bias: Float32Array | null, out: number): Mat {
  const inp = x[0].length;
  return x.map((row) => {
    const y = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let sum = bias ? bias[o] : 0;
      for (let i = 0; i < inp; i++) sum += weight[o * inp + i] * row[i];
      y[o] = sum;
    }
    return y;
  });
}

export function layerNorm(x: Mat, gain: Float32Array, bias: Float32Array, eps = 1e-5): Mat {
  return x.map((row) => {
    const mean = row.reduce((a, b) => a + b, 0) / row.length;
    const variance = row.reduce((a, b) => a + (b - mean) ** 2, 0) / row.length;
    const inv = 1 / Math.sqrt(variance + eps);
    return row.map((v, i) => (v - mean) * inv * gain[i] + bias[i]);
  });
}

export const add = (a: Mat, b: Mat): Mat => a.map((row, i) => row.map((v, j) => v + b[i][j]));

/** softmax(q·kᵀ / √hd [+ causal]) v per head. */
export function attention(q: Mat, k: Mat, v: Mat, heads: number, causal: boolean): Mat {
  const d = q[0].length;
  const hd = d / heads;
  const scale = 1 / Math.sqrt(hd);
  return q.map((qRow, i) => {
    const out = new Float64Array(d);
    for (let h = 0; h < heads; h++) {
      const visible = causal ? i + 1 : k.length;
      const scores = new Float64Array(visible);
      let max = -Infinity;
      for (let j = 0; j < visible; j++) {
        let dot = 0;
        for (let c = h * hd; c < (h + 1) * hd; c++) dot += qRow[c] * k[j][c];
        scores[j] = dot * scale;
        max = Math.max(max, scores[j]);
      }
      let total = 0;
      for (let j = 0; j < visible; j++) total += scores[j] = Math.exp(scores[j] - max);
      for (let j = 0; j < visible; j++) for (let c = h * hd; c < (h + 1) * hd; c++) out[c] += (scores[j] / total) * v[j][c];
    }
    return out;
  });
}

function attentionBlock(weights: ModelWeights, prefix: string, x: Mat, kv: Mat, heads: number, causal: boolean): Mat {
  const d = x[0].length;
  const q = linear(x, w(weights, `${prefix}.q_proj.weight`), w(weights, `${prefix}.q_proj.bias`), d);
  const k = linear(kv, w(weights, `${prefix}.k_proj.weight`), null, d);
  const v = linear(kv, w(weights, `${prefix}.v_proj.weight`), w(weights, `${prefix}.v_proj.bias`), d);
  return linear(attention(q, k, v, heads, causal), w(weights, `${prefix}.out_proj.weight`), w(weights, `${prefix}.out_proj.bias`), d);
}

function mlp(weights: ModelWeights, prefix: string, x: Mat, ffn: number): Mat {
  const d = x[0].length;
  const h = linear(x, w(weights, `${prefix}.fc1.weight`), w(weights, `${prefix}.fc1.bias`), ffn).map((r) => r.map(gelu));
  return linear(h, w(weights, `${prefix}.fc2.weight`), w(weights, `${prefix}.fc2.bias`), d);
}

const ln = (weights: ModelWeights, prefix: string, x: Mat) => layerNorm(x, w(weights, `${prefix}.weight`), w(weights, `${prefix}.bias`));

/** Conv1d, kernel 3, padding 1: input [cin][t] -> output [cout][tOut]. */
function conv1d(x: Float64Array[], weight: Float32Array, bias: Float32Array, cout: number, stride: number): Float64Array[] {
  const cin = x.length;
  const t = x[0].length;
  const tOut = Math.floor((t + 2 - 3) / stride) + 1;
  const out: Float64Array[] = [];
  for (let o = 0; o < cout; o++) {
    const row = new Float64Array(tOut).fill(bias[o]);
    for (let i = 0; i < cin; i++) {
      const xi = x[i];
      for (let k = 0; k < 3; k++) {
        const wk = weight[(o * cin + i) * 3 + k];
        for (let p = 0; p < tOut; p++) {
          const at = p * stride + k - 1;
          if (at >= 0 && at < t) row[p] += wk * xi[at];
        }
      }
    }
    out.push(row);
  }
  return out;
}

/** Encoder output [positions][d] for log-mel features [mels, frames] (mel-major). */
export function referenceEncoder(weights: ModelWeights, s: TinyWhisperShape, features: Float32Array): Mat {
  const frames = 2 * s.sourcePositions;
  const mels: Float64Array[] = Array.from({ length: s.numMelBins }, (_, m) => Float64Array.from(features.subarray(m * frames, (m + 1) * frames)));
  const c1 = conv1d(mels, w(weights, 'model.encoder.conv1.weight'), w(weights, 'model.encoder.conv1.bias'), s.dModel, 1).map((r) => r.map(gelu));
  const c2 = conv1d(c1, w(weights, 'model.encoder.conv2.weight'), w(weights, 'model.encoder.conv2.bias'), s.dModel, 2).map((r) => r.map(gelu));
  const positions = w(weights, 'model.encoder.embed_positions.weight');
  let h: Mat = Array.from({ length: s.sourcePositions }, (_, t) => Float64Array.from({ length: s.dModel }, (_, c) => c2[c][t] + positions[t * s.dModel + c]));
  for (let l = 0; l < s.encoderLayers; l++) {
    const p = `model.encoder.layers.${l}`;
    const normed = ln(weights, `${p}.self_attn_layer_norm`, h);
    h = add(h, attentionBlock(weights, `${p}.self_attn`, normed, normed, s.encoderHeads, false));
    h = add(h, mlp(weights, p, ln(weights, `${p}.final_layer_norm`, h), s.encoderFfn));
  }
  return ln(weights, 'model.encoder.layer_norm', h);
}

/** Logits [tokens.length][vocab] of the decoder over the whole token sequence. */
export function referenceDecoder(weights: ModelWeights, s: TinyWhisperShape, encoded: Mat, tokens: readonly number[]): Mat {
  const d = s.dModel;
  const embed = w(weights, 'model.decoder.embed_tokens.weight');
  const positions = w(weights, 'model.decoder.embed_positions.weight');
  const vocab = embed.length / d;
  let h: Mat = tokens.map((tok, p) => Float64Array.from({ length: d }, (_, c) => embed[tok * d + c] + positions[p * d + c]));
  for (let l = 0; l < s.decoderLayers; l++) {
    const p = `model.decoder.layers.${l}`;
    const normed = ln(weights, `${p}.self_attn_layer_norm`, h);
    h = add(h, attentionBlock(weights, `${p}.self_attn`, normed, normed, s.decoderHeads, true));
    h = add(h, attentionBlock(weights, `${p}.encoder_attn`, ln(weights, `${p}.encoder_attn_layer_norm`, h), encoded, s.decoderHeads, false));
    h = add(h, mlp(weights, p, ln(weights, `${p}.final_layer_norm`, h), s.decoderFfn));
  }
  return linear(ln(weights, 'model.decoder.layer_norm', h), embed, null, vocab);
}
