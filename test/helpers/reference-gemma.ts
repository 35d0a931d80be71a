// An independent float64 forward pass of gemma2 / gemma3 text decoders, read straight from a
// Hugging Face config.json and checkpoint tensors in HF layout (norm gains stored as w, applied as
// 1 + w), written from transformers' Gemma2/Gemma3 modelling code: it shares nothing with the
// loaders or graphs under test, so it checks the config mapping as well as the numerics.
type Json = Record<string, unknown>;

/** HF tensors by stored name, as float32 values. */
export type HfTensors = ReadonlyMap<string, Float32Array>;

/** The config of the text decoder: `text_config` of a Gemma3ForConditionalGeneration, else the file itself. */
function textConfig(json: Json): Json {
  return typeof json.text_config === 'object' && json.text_config !== null ? (json.text_config as Json) : json;
}

/** The weights under the text decoder's own names (`model.…`, `lm_head.weight`), whatever the checkpoint's class prefix. */
function textTensor(tensors: HfTensors, name: string): Float32Array {
  for (const stored of [name, name.replace(/^model\./, 'language_model.model.'), name.replace(/^model\./, 'model.language_model.')]) {
    const t = tensors.get(stored);
    if (t) return t;
  }
  throw new Error(`reference: no tensor ${name}`);
}

function num(c: Json, key: string, fallback?: number): number {
  const v = c[key];
  if (typeof v === 'number') return v;
  if (fallback !== undefined) return fallback;
  throw new Error(`reference: config lacks ${key}`);
}

function matVec(w: Float32Array, x: Float64Array, out: number): Float64Array {
  const inp = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let sum = 0;
    for (let i = 0; i < inp; i++) sum += w[o * inp + i] * x[i];
    y[o] = sum;
  }
  return y;
}

/** Gemma's RMSNorm: x / sqrt(mean(x²) + eps) * (1 + w), over each `width` values. */
function gemmaNorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  const width = w.length;
  const y = new Float64Array(x.length);
  for (let at = 0; at < x.length; at += width) {
    let ss = 0;
    for (let i = 0; i < width; i++) ss += x[at + i] ** 2;
    const inv = 1 / Math.sqrt(ss / width + eps);
    for (let i = 0; i < width; i++) y[at + i] = x[at + i] * inv * (1 + w[i]);
  }
  return y;
}

/** gelu_pytorch_tanh. */
function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
}

/** Rotate-half RoPE of every head of x at `position` with inverse frequencies `invFreq`. */
function rope(x: Float64Array, headDim: number, position: number, invFreq: readonly number[]): void {
  const half = headDim / 2;
  for (let at = 0; at < x.length; at += headDim) {
    for (let i = 0; i < half; i++) {
      const a = x[at + i];
      const b = x[at + i + half];
      const angle = position * invFreq[i];
      x[at + i] = a * Math.cos(angle) - b * Math.sin(angle);
      x[at + i + half] = b * Math.cos(angle) + a * Math.sin(angle);
    }
  }
}

/** Per layer: sliding or not, from layer_types, else gemma3's sliding_window_pattern (every n-th global) or gemma2's parity (odd layers global). */
function slidingLayers(c: Json, gemma3: boolean, layers: number): boolean[] {
  if (Array.isArray(c.layer_types)) return (c.layer_types as string[]).map((t) => t === 'sliding_attention');
  if (gemma3) {
    const pattern = num(c, 'sliding_window_pattern', 6);
    return Array.from({ length: layers }, (_, i) => (i + 1) % pattern !== 0);
  }
  return Array.from({ length: layers }, (_, i) => i % 2 === 0);
}

/**
 * Logits [tokens.length][vocab] of a forward pass over `tokens` from position 0, causal but for
 * `imageRuns`, whose positions see each other both ways (Gemma 3's token_type_ids mask).
 * `inputRows`: positions that take the given vector, unscaled, instead of their scaled token embedding (image rows).
 */
export function referenceGemmaForward(
  configJson: Json,
  tensors: HfTensors,
  tokens: readonly number[],
  inputRows?: ReadonlyMap<number, ArrayLike<number>>,
  imageRuns: readonly { offset: number; length: number }[] = [],
): Float64Array[] {
  const c = textConfig(configJson);
  const gemma3 = c.model_type === 'gemma3_text' || configJson.model_type === 'gemma3';
  const hidden = num(c, 'hidden_size');
  const layers = num(c, 'num_hidden_layers');
  const heads = num(c, 'num_attention_heads');
  const kvHeads = num(c, 'num_key_value_heads', heads);
  const hd = num(c, 'head_dim', hidden / heads);
  const ffn = num(c, 'intermediate_size');
  const vocab = num(c, 'vocab_size');
  const eps = num(c, 'rms_norm_eps', 1e-6);
  const scale = num(c, 'query_pre_attn_scalar', hd) ** -0.5;
  const window = num(c, 'sliding_window', 4096);
  const attnCap = typeof c.attn_logit_softcapping === 'number' ? c.attn_logit_softcapping : 0;
  const finalCap = typeof c.final_logit_softcapping === 'number' ? c.final_logit_softcapping : 0;
  const sliding = slidingLayers(c, gemma3, layers);
  const invFreq = (theta: number, divisor: number) => Array.from({ length: hd / 2 }, (_, i) => theta ** (-(2 * i) / hd) / divisor);
  const linearFactor = (scaling: Json | null | undefined) => (scaling && (scaling.rope_type ?? scaling.type) === 'linear' ? num(scaling, 'factor') : 1);
  // gemma3: local layers use rope_local_base_freq unscaled, global ones rope_theta with rope_scaling
  // (newer configs: rope_parameters per layer type); gemma2 one base for all.
  const perType = c.rope_parameters as Record<string, Json> | undefined;
  const globalFreq = perType?.full_attention
    ? invFreq(num(perType.full_attention, 'rope_theta'), linearFactor(perType.full_attention))
    : invFreq(num(c, 'rope_theta', gemma3 ? 1e6 : 1e4), linearFactor(c.rope_scaling as Json | null));
  const localFreq = perType?.sliding_attention
    ? invFreq(num(perType.sliding_attention, 'rope_theta'), linearFactor(perType.sliding_attention))
    : gemma3
      ? invFreq(num(c, 'rope_local_base_freq', 1e4), 1)
      : globalFreq;
  // HF casts sqrt(hidden) to the weights' dtype: float32 here.
  const normalizer = Math.fround(Math.sqrt(hidden));

  const embed = textTensor(tensors, 'model.embed_tokens.weight');
  const untied = c.tie_word_embeddings === false || configJson.tie_word_embeddings === false;
  const head = untied ? textTensor(tensors, 'lm_head.weight') : embed;
  const L = Array.from({ length: layers }, (_, l) => {
    const w = (n: string) => textTensor(tensors, `model.layers.${l}.${n}`);
    return {
      inNorm: w('input_layernorm.weight'),
      q: w('self_attn.q_proj.weight'),
      k: w('self_attn.k_proj.weight'),
      v: w('self_attn.v_proj.weight'),
      qNorm: gemma3 ? w('self_attn.q_norm.weight') : null,
      kNorm: gemma3 ? w('self_attn.k_norm.weight') : null,
      o: w('self_attn.o_proj.weight'),
      postAttn: w('post_attention_layernorm.weight'),
      preFf: w('pre_feedforward_layernorm.weight'),
      postFf: w('post_feedforward_layernorm.weight'),
      gate: w('mlp.gate_proj.weight'),
      up: w('mlp.up_proj.weight'),
      down: w('mlp.down_proj.weight'),
      keys: [] as Float64Array[],
      values: [] as Float64Array[],
    };
  });
  const finalNorm = textTensor(tensors, 'model.norm.weight');
  const group = heads / kvHeads;

  // Layer by layer over every position: a bidirectional run's rows read keys after their own.
  let xs = tokens.map((token, pos) => {
    const given = inputRows?.get(pos);
    return given ? Float64Array.from(given) : Float64Array.from(embed.subarray(token * hidden, (token + 1) * hidden), (v) => v * normalizer);
  });
  const runOf = (pos: number) => imageRuns.find((r) => pos >= r.offset && pos < r.offset + r.length);
  L.forEach((layer, l) => {
    const freq = sliding[l] ? localFreq : globalFreq;
    const qs = xs.map((x, pos) => {
      const xn = gemmaNorm(x, layer.inNorm, eps);
      let q = matVec(layer.q, xn, heads * hd);
      let k = matVec(layer.k, xn, kvHeads * hd);
      const v = matVec(layer.v, xn, kvHeads * hd);
      if (layer.qNorm && layer.kNorm) {
        q = gemmaNorm(q, layer.qNorm, eps);
        k = gemmaNorm(k, layer.kNorm, eps);
      }
      rope(q, hd, pos, freq);
      rope(k, hd, pos, freq);
      layer.keys.push(k);
      layer.values.push(v);
      return q;
    });
    xs = xs.map((x, pos) => {
      const q = qs[pos];
      // transformers' mask: (causal and, on sliding layers, within the window) or the same image.
      const run = runOf(pos);
      const seen = (t: number) => (t <= pos && (!sliding[l] || t > pos - window)) || (run !== undefined && t >= run.offset && t < run.offset + run.length);
      const visible = layer.keys.map((_, t) => t).filter(seen);
      const attn = new Float64Array(heads * hd);
      for (let h = 0; h < heads; h++) {
        const kvh = Math.floor(h / group);
        const scores = visible.map((t) => {
          let dot = 0;
          for (let d = 0; d < hd; d++) dot += q[h * hd + d] * layer.keys[t][kvh * hd + d];
          const s = dot * scale;
          return attnCap > 0 ? attnCap * Math.tanh(s / attnCap) : s;
        });
        const max = Math.max(...scores);
        const exps = scores.map((s) => Math.exp(s - max));
        const total = exps.reduce((a, b) => a + b, 0);
        exps.forEach((e, i) => {
          for (let d = 0; d < hd; d++) attn[h * hd + d] += (e / total) * layer.values[visible[i]][kvh * hd + d];
        });
      }
      const attnOut = gemmaNorm(matVec(layer.o, attn, hidden), layer.postAttn, eps);
      let y = x.map((val, i) => val + attnOut[i]);
      const xn2 = gemmaNorm(y, layer.preFf, eps);
      const gate = matVec(layer.gate, xn2, ffn);
      const up = matVec(layer.up, xn2, ffn);
      const mlp = gemmaNorm(matVec(layer.down, gate.map((g, i) => geluTanh(g) * up[i]), hidden), layer.postFf, eps);
      y = y.map((val, i) => val + mlp[i]);
      return y;
    });
  });
  return xs.map((x) => {
    const logits = matVec(head, gemmaNorm(x, finalNorm, eps), vocab);
    return finalCap > 0 ? logits.map((z) => finalCap * Math.tanh(z / finalCap)) : logits;
  });
}
