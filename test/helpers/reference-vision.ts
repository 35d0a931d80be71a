// Float64 forward of the Gemma 3 and LLaVA-1.5 vision towers and projectors, read straight from
// config.json and the Hugging Face tensors (transformers' SiglipVisionModel / CLIPVisionModel,
// Gemma3MultiModalProjector, LlavaMultiModalProjector): the patch conv as a loop over the kernel,
// plain attention, norms and activations from their definitions.
import { add, attention, gelu, layerNorm, linear } from './whisper-reference';
import type { HfTensors, VisionFamilyName } from './write-vision-models';

type Json = Record<string, unknown>;
type Rows = Float64Array[];

const ACTIVATIONS: Record<string, (x: number) => number> = {
  gelu_pytorch_tanh: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
  quick_gelu: (x) => x / (1 + Math.exp(-1.702 * x)),
  gelu,
};

/** The projector's rows for one image of [3, S, S] planes: [tokens][text hidden]. */
export function referenceVisionForward(family: VisionFamilyName, json: Json, tensors: HfTensors, pixels: Float32Array): Rows {
  const v = json.vision_config as Json;
  const w = (name: string) => {
    const t = tensors.get(name);
    if (!t) throw new Error(`reference: no tensor ${name}`);
    return t;
  };
  const tower = 'vision_tower.vision_model.';
  const d = v.hidden_size as number;
  const p = v.patch_size as number;
  const size = v.image_size as number;
  const side = size / p;
  const eps = v.layer_norm_eps as number;
  const clip = family === 'llava';
  const act = ACTIVATIONS[(v.hidden_act as string | undefined) ?? (clip ? 'quick_gelu' : 'gelu_pytorch_tanh')];

  // Conv2d(3, d, kernel p, stride p), one output position at a time.
  const kernel = w(`${tower}embeddings.patch_embedding.weight`).data;
  const patchBias = tensors.get(`${tower}embeddings.patch_embedding.bias`)?.data;
  let x: Rows = [];
  if (clip) x.push(Float64Array.from(w(`${tower}embeddings.class_embedding`).data));
  for (let py = 0; py < side; py++) {
    for (let px = 0; px < side; px++) {
      const row = new Float64Array(d);
      for (let o = 0; o < d; o++) {
        let sum = patchBias ? patchBias[o] : 0;
        for (let c = 0; c < 3; c++) {
          for (let ky = 0; ky < p; ky++) {
            for (let kx = 0; kx < p; kx++) sum += kernel[((o * 3 + c) * p + ky) * p + kx] * pixels[(c * size + py * p + ky) * size + px * p + kx];
          }
        }
        row[o] = sum;
      }
      x.push(row);
    }
  }
  const positions = w(`${tower}embeddings.position_embedding.weight`).data;
  x = x.map((row, i) => row.map((value, j) => value + positions[i * d + j]));
  const norm = (rows: Rows, name: string) => layerNorm(rows, w(`${name}.weight`).data, w(`${name}.bias`).data, eps);
  if (clip) x = norm(x, `${tower}pre_layrnorm`);

  const layers = v.num_hidden_layers as number;
  // hidden_states[k]: the output after k layers (index 0 is the embeddings); negative from the end.
  const featureLayer = clip ? (json.vision_feature_layer as number) : -1;
  const depth = featureLayer < 0 ? layers + featureLayer + 1 : featureLayer;
  for (let l = 0; l < depth; l++) {
    const pre = `${tower}encoder.layers.${l}.`;
    const lin = (rows: Rows, name: string) => {
      const weight = w(`${pre}${name}.weight`);
      return linear(rows, weight.data, w(`${pre}${name}.bias`).data, weight.shape[0]);
    };
    const h = norm(x, `${pre}layer_norm1`);
    const attn = lin(attention(lin(h, 'self_attn.q_proj'), lin(h, 'self_attn.k_proj'), lin(h, 'self_attn.v_proj'), v.num_attention_heads as number, false), 'self_attn.out_proj');
    x = add(x, attn);
    x = add(x, lin(lin(norm(x, `${pre}layer_norm2`), 'mlp.fc1').map((row) => row.map(act)), 'mlp.fc2'));
  }

  if (clip) {
    const features = json.vision_feature_select_strategy === 'full' ? x : x.slice(1);
    const projector = (rows: Rows, name: string) => linear(rows, w(`${name}.weight`).data, w(`${name}.bias`).data, w(`${name}.weight`).shape[0]);
    return projector(projector(features, 'multi_modal_projector.linear_1').map((row) => row.map(gelu)), 'multi_modal_projector.linear_2');
  }
  x = norm(x, `${tower}post_layernorm`);
  const tokensSide = Math.sqrt(json.mm_tokens_per_image as number);
  const k = side / tokensSide;
  const pooled: Rows = [];
  for (let ty = 0; ty < tokensSide; ty++) {
    for (let tx = 0; tx < tokensSide; tx++) {
      const row = new Float64Array(d);
      for (let y = 0; y < k; y++) for (let xx = 0; xx < k; xx++) x[(ty * k + y) * side + tx * k + xx].forEach((value, j) => (row[j] += value / (k * k)));
      pooled.push(row);
    }
  }
  const gain = w('multi_modal_projector.mm_soft_emb_norm.weight').data;
  const projection = w('multi_modal_projector.mm_input_projection_weight');
  const text = projection.shape[1];
  return pooled.map((row) => {
    const rms = Math.sqrt(row.reduce((a, b) => a + b * b, 0) / d + eps);
    const normed = row.map((value, j) => (value / rms) * (1 + gain[j]));
    const out = new Float64Array(text);
    for (let t = 0; t < text; t++) for (let j = 0; j < d; j++) out[t] += normed[j] * projection.data[j * text + t];
    return out;
  });
}

/**
 * LlavaNextForConditionalGeneration's image features in float64: every [3, S, S] plane of
 * `pixels` (the base image, then the tiles row by row) through the LLaVA tower and projector,
 * then pack_image_features with 'spatial_unpad' as transformers writes it: the tiles' features
 * viewed as (rows, columns, side, side, dim), permuted to one [dim, rows * side, columns * side]
 * grid, unpad_image to the original aspect ratio, image_newline appended as a last column, the
 * grid flattened row by row after the base image's rows.
 */
export function referenceLlavaNextForward(json: Json, tensors: HfTensors, pixels: Float32Array, imageSize: { width: number; height: number }): Rows {
  const v = json.vision_config as Json;
  const size = v.image_size as number;
  const side = size / (v.patch_size as number);
  const plane = 3 * size * size;
  const perTile = Array.from({ length: pixels.length / plane }, (_, i) => referenceVisionForward('llava', json, tensors, pixels.subarray(i * plane, (i + 1) * plane)));
  const [base, ...tiles] = perTile;
  // get_anyres_image_grid_shape over the config's pinpoints, (height, width) pairs.
  const { height: oh, width: ow } = imageSize;
  let best: number[] = [];
  let bestEffective = -1;
  let bestWasted = Infinity;
  for (const [h, w] of json.image_grid_pinpoints as number[][]) {
    const scale = Math.min(w / ow, h / oh);
    const effective = Math.min(Math.floor(ow * scale) * Math.floor(oh * scale), ow * oh);
    if (effective > bestEffective || (effective === bestEffective && w * h - effective < bestWasted)) [best, bestEffective, bestWasted] = [[h, w], effective, w * h - effective];
  }
  const rows = best[0] / size;
  const columns = best[1] / size;
  if (tiles.length !== rows * columns) throw new Error(`reference: ${tiles.length} tiles for a ${rows} x ${columns} grid`);
  // grid[y][x]: the feature at patch row y, patch column x of the whole tile grid.
  const grid: Rows[] = Array.from({ length: rows * side }, (_, y) =>
    Array.from({ length: columns * side }, (_, x) => tiles[Math.floor(y / side) * columns + Math.floor(x / side)][(y % side) * side + (x % side)]),
  );
  const currentHeight = rows * side;
  const currentWidth = columns * side;
  let kept = grid;
  if (ow / oh > currentWidth / currentHeight) {
    const newHeight = Math.trunc(Number((oh * (currentWidth / ow)).toFixed(7)));
    const padding = Math.floor((currentHeight - newHeight) / 2);
    kept = grid.slice(padding, currentHeight - padding);
  } else {
    const newWidth = Math.trunc(Number((ow * (currentHeight / oh)).toFixed(7)));
    const padding = Math.floor((currentWidth - newWidth) / 2);
    kept = grid.map((row) => row.slice(padding, currentWidth - padding));
  }
  const newline = Float64Array.from(tensors.get('image_newline')!.data);
  return [...base, ...kept.flatMap((row) => [...row, newline])];
}

/** Largest |got - want| relative to the largest |want|. */
export function relativeDiff(got: Float32Array, want: ArrayLike<number>[]): number {
  const width = want[0].length;
  expect(got.length).toBe(want.length * width);
  let diff = 0;
  let scale = 0;
  want.forEach((row, i) => {
    for (let j = 0; j < width; j++) {
      diff = Math.max(diff, Math.abs(got[i * width + j] - row[j]));
      scale = Math.max(scale, Math.abs(row[j]));
    }
  });
  return diff / scale;
}
