// An independent float64 forward of Qwen2.5-VL's vision tower, written from transformers'
// Qwen2_5_VisionTransformerPretrainedModel: Conv3d patch embedding, rot_pos_emb (hpos/wpos
// reshaped to merge blocks), get_window_index (unit grid padded with -100 to whole windows),
// blocks attending within cu_seqlens spans, the patch merger, then the argsort of window_index.
// Slow and plain on purpose; weights by their Hugging Face names (`visual.` prefix).
import type { QwenVisionConfig } from '../../src/model/vision/qwen-vision-config';
import { erf } from './encoder-model';


type Tensors = (name: string) => Float32Array;

function linear(x: Float64Array[], w: Float32Array, b: Float32Array | null, out: number): Float64Array[] {
  return x.map((row) => {
    const y = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let s = b ? b[o] : 0;
      for (let i = 0; i < row.length; i++) s += w[o * row.length + i] * row[i];
      y[o] = s;
    }
    return y;
  });
}

function rms(x: Float64Array[], w: Float32Array, eps: number): Float64Array[] {
  return x.map((row) => {
    const ms = row.reduce((a, v) => a + v * v, 0) / row.length;
    const inv = 1 / Math.sqrt(ms + eps);
    return row.map((v, i) => v * inv * w[i]);
  });
}

const gelu = (v: number) => 0.5 * v * (1 + erf(v / Math.SQRT2));

/** [grid_h * grid_w / merge^2, outHiddenSize] rows for one image's preprocessed patches. */
export function referenceQwenVision(c: QwenVisionConfig, w: Tensors, pixels: Float32Array, grid: [number, number, number]): Float64Array[] {
  const [t, h, wd] = grid;
  const m = c.spatialMergeSize;
  const d = c.hiddenSize;
  const hd = d / c.numHeads;
  const cols = 3 * c.temporalPatchSize * c.patchSize * c.patchSize;
  const n = t * h * wd;
  const rows = Array.from({ length: n }, (_, i) => Float64Array.from(pixels.subarray(i * cols, (i + 1) * cols)));

  // Conv3d with kernel = stride = the whole patch: one dot product per output channel.
  let x = linear(rows, w('visual.patch_embed.proj.weight'), null, d);

  // rot_pos_emb: (h, w) ids per patch in merge-block order, frequencies of VisionRotaryEmbedding(hd / 2).
  const ids: Array<[number, number]> = [];
  for (let ti = 0; ti < t; ti++) {
    for (let a = 0; a < h / m; a++) for (let b = 0; b < wd / m; b++) for (let i = 0; i < m; i++) for (let j = 0; j < m; j++) ids.push([a * m + i, b * m + j]);
  }
  const dim = hd / 2;
  const inv = Array.from({ length: dim / 2 }, (_, i) => 1 / Math.pow(10000, (2 * i) / dim));
  let rot = ids.map(([hp, wp]) => [...inv.map((f) => hp * f), ...inv.map((f) => wp * f)]);

  // get_window_index: the merged-unit grid padded to whole windows with -100, read window by window.
  const vws = Math.floor(Math.floor(c.windowSize / m) / c.patchSize);
  const lh = h / m;
  const lw = wd / m;
  const padH = vws - (lh % vws);
  const padW = vws - (lw % vws);
  const nwh = (lh + padH) / vws;
  const nww = (lw + padW) / vws;
  const windowIndex: number[] = [];
  const cuWindow = [0];
  for (let ti = 0; ti < t; ti++) {
    for (let a = 0; a < nwh; a++) {
      for (let b = 0; b < nww; b++) {
        let count = 0;
        for (let i = 0; i < vws; i++) {
          for (let j = 0; j < vws; j++) {
            const r = a * vws + i;
            const col = b * vws + j;
            if (r < lh && col < lw) {
              windowIndex.push(ti * lh * lw + r * lw + col);
              count++;
            }
          }
        }
        cuWindow.push(cuWindow[cuWindow.length - 1] + count * m * m);
      }
    }
  }
  const uniqueWindow = cuWindow.filter((v, i) => i === 0 || v !== cuWindow[i - 1]);
  const unit = m * m;
  const reorder = <T>(list: T[]) => windowIndex.flatMap((u) => list.slice(u * unit, (u + 1) * unit));
  x = reorder(x);
  rot = reorder(rot);
  const emb = rot.map((r) => [...r, ...r]);
  const cuFull = [0, n];

  for (let blk = 0; blk < c.depth; blk++) {
    const p = `visual.blocks.${blk}`;
    const spans = c.fullAttentionBlocks.includes(blk) ? cuFull : uniqueWindow;
    const qkv = linear(rms(x, w(`${p}.norm1.weight`), c.normEps), w(`${p}.attn.qkv.weight`), w(`${p}.attn.qkv.bias`), 3 * d);
    const rope = (row: Float64Array, part: number, i: number) => {
      const out = new Float64Array(d);
      for (let head = 0; head < c.numHeads; head++) {
        for (let k = 0; k < hd; k++) {
          const v = row[part * d + head * hd + k];
          const other = k < hd / 2 ? -row[part * d + head * hd + k + hd / 2] : row[part * d + head * hd + k - hd / 2];
          out[head * hd + k] = v * Math.cos(emb[i][k]) + other * Math.sin(emb[i][k]);
        }
      }
      return out;
    };
    const q = qkv.map((row, i) => rope(row, 0, i));
    const k = qkv.map((row, i) => rope(row, 1, i));
    const v = qkv.map((row) => row.slice(2 * d, 3 * d));
    const attn = x.map(() => new Float64Array(d));
    for (let s = 0; s + 1 < spans.length; s++) {
      for (let i = spans[s]; i < spans[s + 1]; i++) {
        for (let head = 0; head < c.numHeads; head++) {
          const scores: number[] = [];
          for (let j = spans[s]; j < spans[s + 1]; j++) {
            let dot = 0;
            for (let e = 0; e < hd; e++) dot += q[i][head * hd + e] * k[j][head * hd + e];
            scores.push(dot / Math.sqrt(hd));
          }
          const max = Math.max(...scores);
          const exps = scores.map((z) => Math.exp(z - max));
          const total = exps.reduce((a, b) => a + b, 0);
          for (let j = spans[s]; j < spans[s + 1]; j++) {
            for (let e = 0; e < hd; e++) attn[i][head * hd + e] += (exps[j - spans[s]] / total) * v[j][head * hd + e];
          }
        }
      }
    }
    const projected = linear(attn, w(`${p}.attn.proj.weight`), w(`${p}.attn.proj.bias`), d);
    x = x.map((row, i) => row.map((val, e) => val + projected[i][e]));
    const normed = rms(x, w(`${p}.norm2.weight`), c.normEps);
    const gate = linear(normed, w(`${p}.mlp.gate_proj.weight`), w(`${p}.mlp.gate_proj.bias`), c.intermediateSize);
    const up = linear(normed, w(`${p}.mlp.up_proj.weight`), w(`${p}.mlp.up_proj.bias`), c.intermediateSize);
    const act = gate.map((row, i) => row.map((g, e) => (g / (1 + Math.exp(-g))) * up[i][e]));
    const down = linear(act, w(`${p}.mlp.down_proj.weight`), w(`${p}.mlp.down_proj.bias`), d);
    x = x.map((row, i) => row.map((val, e) => val + down[i][e]));
  }

  const normed = rms(x, w('visual.merger.ln_q.weight'), c.normEps);
  const grouped = Array.from({ length: n / unit }, (_, u) => {
    const row = new Float64Array(unit * d);
    for (let j = 0; j < unit; j++) row.set(normed[u * unit + j], j * d);
    return row;
  });
  const hidden = linear(grouped, w('visual.merger.mlp.0.weight'), w('visual.merger.mlp.0.bias'), unit * d).map((row) => row.map(gelu));
  const merged = linear(hidden, w('visual.merger.mlp.2.weight'), w('visual.merger.mlp.2.bias'), c.outHiddenSize);
  // hidden_states[argsort(window_index)]: row u of the result is the merged row whose window_index is u.
  const out: Float64Array[] = new Array<Float64Array>(merged.length);
  windowIndex.forEach((u, at) => (out[u] = merged[at]));
  return out;
}
