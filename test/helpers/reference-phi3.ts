// An independent float64 forward pass of a Phi-3-family decoder, read straight from what a
// Hugging Face checkpoint holds: config.json and the stored (fused) tensors. It follows HF's
// modeling_phi3: qkv_proj rows [q; k; v], gate_up_proj rows [gate; up] (chunk(2)), RoPE on the
// first head_dim * partial_rotary_factor dims (rotate-half within them), LongRoPE inverse
// frequencies 1 / (factor_i * theta^(2i/rotary_dim)) with cos/sin scaled by
// sqrt(1 + ln(max_pos / original) / ln(original)); the table is chosen by `maxModelLen`; a query at
// p sees keys p - sliding_window + 1 .. p (HF's sliding-window mask, which Phi3Attention applies).

type Json = Record<string, unknown>;

export interface Phi3ReferenceOptions {
  /** long_factor when > original_max_position_embeddings, else short_factor (the server's choice). */
  maxModelLen: number;
}

/** Logits [position][vocab] of a causal forward over `tokens` from position 0. */
export function referencePhi3(json: Json, tensors: ReadonlyMap<string, Float32Array>, tokens: readonly number[], opts: Phi3ReferenceOptions): Float64Array[] {
  const n = (key: string) => json[key] as number;
  const hidden = n('hidden_size');
  const heads = n('num_attention_heads');
  const kvHeads = n('num_key_value_heads');
  const ffn = n('intermediate_size');
  const hd = hidden / heads;
  const rot = Math.floor(hd * ((json.partial_rotary_factor as number | undefined) ?? 1));
  const eps = n('rms_norm_eps');
  const window = (json.sliding_window as number | null | undefined) ?? Infinity;
  const t = (name: string) => {
    const v = tensors.get(name);
    if (!v) throw new Error(`reference: no tensor ${name}`);
    return v;
  };
  const { inv, gain } = frequencies(json, rot, opts.maxModelLen);
  const embed = t('model.embed_tokens.weight');
  const head = json.tie_word_embeddings ? embed : t('lm_head.weight');
  const cache = Array.from({ length: n('num_hidden_layers') }, () => ({ k: [] as Float64Array[], v: [] as Float64Array[] }));

  return tokens.map((token, pos) => {
    let x: Float64Array = Float64Array.from(embed.subarray(token * hidden, (token + 1) * hidden));
    cache.forEach((layer, l) => {
      const p = `model.layers.${l}.`;
      const qkv = linear(t(`${p}self_attn.qkv_proj.weight`), norm(x, t(`${p}input_layernorm.weight`), eps));
      const q = qkv.slice(0, heads * hd);
      const k = qkv.slice(heads * hd, (heads + kvHeads) * hd);
      const v = qkv.slice((heads + kvHeads) * hd);
      for (let h = 0; h < heads; h++) rotate(q, h * hd, rot, pos, inv, gain);
      for (let h = 0; h < kvHeads; h++) rotate(k, h * hd, rot, pos, inv, gain);
      layer.k.push(k);
      layer.v.push(v);
      const attn = new Float64Array(heads * hd);
      for (let h = 0; h < heads; h++) {
        const kv = Math.floor(h / (heads / kvHeads)) * hd;
        const scores = layer.k.map((kk, j) => (j > pos - window ? dot(q, h * hd, kk, kv, hd) / Math.sqrt(hd) : -Infinity));
        const top = Math.max(...scores);
        const w = scores.map((s) => Math.exp(s - top));
        const total = w.reduce((a, b) => a + b, 0);
        layer.v.forEach((vv, j) => {
          for (let d = 0; d < hd; d++) attn[h * hd + d] += (w[j] / total) * vv[kv + d];
        });
      }
      x = add(x, linear(t(`${p}self_attn.o_proj.weight`), attn));
      const gateUp = linear(t(`${p}mlp.gate_up_proj.weight`), norm(x, t(`${p}post_attention_layernorm.weight`), eps));
      const act = new Float64Array(ffn);
      for (let i = 0; i < ffn; i++) act[i] = (gateUp[i] / (1 + Math.exp(-gateUp[i]))) * gateUp[ffn + i];
      x = add(x, linear(t(`${p}mlp.down_proj.weight`), act));
    });
    return linear(head, norm(x, t('model.norm.weight'), eps));
  });
}

/** Inverse frequencies of the rotary dims and the cos/sin gain (LongRoPE or plain). */
function frequencies(json: Json, rot: number, maxModelLen: number): { inv: number[]; gain: number } {
  const theta = json.rope_theta as number;
  const base = Array.from({ length: rot / 2 }, (_, i) => Math.pow(theta, (-2 * i) / rot));
  const scaling = json.rope_scaling as Json | null | undefined;
  if (!scaling) return { inv: base, gain: 1 };
  const original = json.original_max_position_embeddings as number;
  const factors = (maxModelLen > original ? scaling.long_factor : scaling.short_factor) as number[];
  const stretch = (json.max_position_embeddings as number) / original;
  const gain = stretch > 1 ? Math.sqrt(1 + Math.log(stretch) / Math.log(original)) : 1;
  return { inv: base.map((f, i) => f / factors[i]), gain };
}

/** Rotate-half over x[at .. at + rot) at `pos`; the head's other dims pass through. */
function rotate(x: Float64Array, at: number, rot: number, pos: number, inv: number[], gain: number): void {
  const half = rot / 2;
  for (let i = 0; i < half; i++) {
    const angle = pos * inv[i];
    const a = x[at + i];
    const b = x[at + half + i];
    x[at + i] = gain * (a * Math.cos(angle) - b * Math.sin(angle));
    x[at + half + i] = gain * (b * Math.cos(angle) + a * Math.sin(angle));
  }
}

function linear(w: Float32Array, x: Float64Array): Float64Array {
  const out = new Float64Array(w.length / x.length);
  for (let o = 0; o < out.length; o++) {
    let s = 0;
    for (let i = 0; i < x.length; i++) s += w[o * x.length + i] * x[i];
    out[o] = s;
  }
  return out;
}

function norm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  const ms = x.reduce((s, v) => s + v * v, 0) / x.length;
  return x.map((v, i) => (v / Math.sqrt(ms + eps)) * w[i]);
}

function dot(a: Float64Array, at: number, b: Float64Array, bt: number, len: number): number {
  let s = 0;
  for (let d = 0; d < len; d++) s += a[at + d] * b[bt + d];
  return s;
}

function add(a: Float64Array, b: Float64Array): Float64Array {
  return a.map((v, i) => v + b[i]);
}
