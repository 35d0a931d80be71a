// A plain float64 reference forward of gpt-oss, written from transformers' modeling_gpt_oss.py
// and llama.cpp's openai-moe graph: RMSNorm, q/k/v/o with biases, YaRN RoPE (rotate-half),
// attention with a learned sink logit per head in the softmax's denominator and a sliding window
// on the sliding layers, and the MoE block (router with bias, top-k of the logits, softmax over
// the k, experts with biases and the clamped SwiGLU). Slow loops; for checking the runner.
import { dequantize } from '../../src/model/gguf/dequant';
import type { GptOssArchConfig } from '../../src/model/gpt-oss/gpt-oss-config';
import type { ModelWeights } from '../../src/model/types';

function weight(weights: ModelWeights, name: string): Float32Array {
  const t = weights.get(name);
  if (t.kind === 'f32') return t.data;
  return dequantize(t.format, t.data, t.shape.reduce((a, b) => a * b, 1));
}

/** y = W x + b, W [out, in] row-major starting at `offset`. */
function affine(w: Float32Array, x: Float64Array, out: number, bias: Float32Array | null, offset = 0, biasOffset = 0): Float64Array {
  const n = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let sum = bias ? bias[biasOffset + o] : 0;
    for (let i = 0; i < n; i++) sum += w[offset + o * n + i] * x[i];
    y[o] = sum;
  }
  return y;
}

function rmsNorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * inv * w[i]);
}

/** HF _compute_yarn_parameters: per-frequency inverse wavelengths and the cos/sin gain. */
export function yarnFrequencies(c: GptOssArchConfig): { freqs: number[]; gain: number } {
  const d = c.headDim;
  const base = Array.from({ length: d / 2 }, (_, i) => Math.pow(c.ropeTheta, (-2 * i) / d));
  const s = c.ropeScaling;
  if (!s) return { freqs: base, gain: 1 };
  if (s.rope_type !== 'yarn') throw new Error(`reference: rope type ${String(s.rope_type)}`);
  const factor = Number(s.factor);
  const original = Number(s.original_max_position_embeddings ?? c.maxPositionEmbeddings);
  const dimFor = (turns: number) => (d * Math.log(original / (turns * 2 * Math.PI))) / (2 * Math.log(c.ropeTheta));
  let lo = dimFor(Number(s.beta_fast ?? 32));
  let hi = dimFor(Number(s.beta_slow ?? 1));
  if (s.truncate !== false) {
    lo = Math.floor(lo);
    hi = Math.ceil(hi);
  }
  lo = Math.max(lo, 0);
  hi = Math.min(hi, d - 1);
  if (lo === hi) hi += 0.001;
  const freqs = base.map((f, i) => {
    const toInterpolated = Math.min(1, Math.max(0, (i - lo) / (hi - lo)));
    return (f / factor) * toInterpolated + f * (1 - toInterpolated);
  });
  return { freqs, gain: factor > 1 ? 0.1 * Math.log(factor) + 1 : 1 };
}

function rope(x: Float64Array, heads: number, d: number, position: number, { freqs, gain }: { freqs: number[]; gain: number }): void {
  const half = d / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      const a = x[h * d + i];
      const b = x[h * d + i + half];
      const angle = position * freqs[i];
      x[h * d + i] = gain * (a * Math.cos(angle) - b * Math.sin(angle));
      x[h * d + i + half] = gain * (b * Math.cos(angle) + a * Math.sin(angle));
    }
  }
}

/** Which experts a router's logits pick (top k, ties to the lower index) and their softmax-over-k weights. */
export function routeTopK(logits: Float64Array, k: number): Array<{ expert: number; weight: number }> {
  const picked = [...logits.keys()].sort((a, b) => logits[b] - logits[a] || a - b).slice(0, k);
  const max = logits[picked[0]];
  const exps = picked.map((e) => Math.exp(logits[e] - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return picked.map((expert, j) => ({ expert, weight: exps[j] / sum }));
}

/** What a token's MoE block did: the experts it was routed to and how many SwiGLU inputs the clamp cut. */
export interface MoeEvent {
  layer: number;
  position: number;
  experts: number[];
  clamped: number;
}

/** One expert: down(swiglu(gate(x), up(x))) with biases, HF's GptOssExperts; counts clamped inputs into `event`. */
function expert(c: GptOssArchConfig, w: (n: string) => Float32Array, e: number, x: Float64Array, event: MoeEvent): Float64Array {
  const f = c.expertIntermediateSize;
  const h = c.hiddenSize;
  const gate = affine(w('mlp.experts.gate_proj.weight'), x, f, w('mlp.experts.gate_proj.bias'), e * f * h, e * f);
  const up = affine(w('mlp.experts.up_proj.weight'), x, f, w('mlp.experts.up_proj.bias'), e * f * h, e * f);
  const act = new Float64Array(f);
  for (let i = 0; i < f; i++) {
    if (gate[i] > c.swigluLimit) event.clamped++;
    if (Math.abs(up[i]) > c.swigluLimit) event.clamped++;
    const g = Math.min(gate[i], c.swigluLimit);
    const u = Math.min(Math.max(up[i], -c.swigluLimit), c.swigluLimit);
    act[i] = (g / (1 + Math.exp(-c.swigluAlpha * g))) * (u + 1);
  }
  return affine(w('mlp.experts.down_proj.weight'), act, h, w('mlp.experts.down_proj.bias'), e * h * f, e * h);
}

/** Logits [tokens.length][vocab] of a causal forward over `tokens` from position 0 (canonical weights). */
export function referenceGptOss(c: GptOssArchConfig, weights: ModelWeights, tokens: readonly number[], observe?: (event: MoeEvent) => void): Float32Array[] {
  const d = c.headDim;
  const group = c.numHeads / c.numKvHeads;
  const rot = yarnFrequencies(c);
  const embed = weight(weights, 'model.embed_tokens.weight');
  let xs = tokens.map((t) => Float64Array.from(embed.subarray(t * c.hiddenSize, (t + 1) * c.hiddenSize)));
  for (let l = 0; l < c.numLayers; l++) {
    const w = (n: string) => weight(weights, `model.layers.${l}.${n}`);
    const sliding = (c.slidingWindow ?? 0) > 0 && (c.layerTypes?.[l] ?? 'sliding_attention') === 'sliding_attention';
    const sinks = w('self_attn.sinks');
    const qs: Float64Array[] = [];
    const ks: Float64Array[] = [];
    const vs: Float64Array[] = [];
    xs.forEach((x, pos) => {
      const n = rmsNorm(x, w('input_layernorm.weight'), c.rmsNormEps);
      const q = affine(w('self_attn.q_proj.weight'), n, c.numHeads * d, w('self_attn.q_proj.bias'));
      const k = affine(w('self_attn.k_proj.weight'), n, c.numKvHeads * d, w('self_attn.k_proj.bias'));
      rope(q, c.numHeads, d, pos, rot);
      rope(k, c.numKvHeads, d, pos, rot);
      qs.push(q);
      ks.push(k);
      vs.push(affine(w('self_attn.v_proj.weight'), n, c.numKvHeads * d, w('self_attn.v_proj.bias')));
    });
    xs = xs.map((x, pos) => {
      const attn = new Float64Array(c.numHeads * d);
      const first = sliding ? Math.max(0, pos - c.slidingWindow! + 1) : 0;
      for (let h = 0; h < c.numHeads; h++) {
        const kv = Math.floor(h / group);
        const scores: number[] = [];
        for (let j = first; j <= pos; j++) {
          let s = 0;
          for (let i = 0; i < d; i++) s += qs[pos][h * d + i] * ks[j][kv * d + i];
          scores.push(s / Math.sqrt(d));
        }
        const max = Math.max(...scores, sinks[h]);
        const exps = scores.map((s) => Math.exp(s - max));
        const denominator = exps.reduce((a, b) => a + b, 0) + Math.exp(sinks[h] - max);
        exps.forEach((e, j) => {
          for (let i = 0; i < d; i++) attn[h * d + i] += (e / denominator) * vs[first + j][kv * d + i];
        });
      }
      const mid = affine(w('self_attn.o_proj.weight'), attn, c.hiddenSize, w('self_attn.o_proj.bias')).map((v, i) => v + x[i]);
      const n = rmsNorm(mid, w('post_attention_layernorm.weight'), c.rmsNormEps);
      const out = Float64Array.from(mid);
      const routes = routeTopK(affine(w('mlp.gate.weight'), n, c.numExperts, w('mlp.gate.bias')), c.numExpertsPerToken);
      const event: MoeEvent = { layer: l, position: pos, experts: routes.map((r) => r.expert), clamped: 0 };
      for (const { expert: e, weight: g } of routes) expert(c, w, e, n, event).forEach((v, i) => (out[i] += g * v));
      observe?.(event);
      return out;
    });
  }
  const head = weight(weights, c.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight');
  return xs.map((x) => Float32Array.from(affine(head, rmsNorm(x, weight(weights, 'model.norm.weight'), c.rmsNormEps), c.vocabSize, null)));
}
