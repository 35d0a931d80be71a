// What a tiny vision-language model (write-vision-models.ts, qwen-vl-files.ts) should answer to a
// prompt with images, computed in float64 from the tensors the writers drew: the tower reference
// gives each image's rows, the decoder reference takes them at the image tokens' positions (with
// Qwen's (t, h, w) positions worked out here), and the result is each position's log-softmax.
// The e2e tests hold a server's greedy tokens and logprobs against it.
import { llamaConfig } from '../../bench/random-llama';
import type { DecoderArchConfig, ModelWeights } from '../../src/model/types';
import type { PreprocessedImage } from '../../src/model/vision/preprocessed-image';
import { IMAGE_PAD_ID, QWEN_VL_TEXT, QWEN_VL_VISION, qwenVisionTensors, qwenVlTextTensors } from './qwen-vl-files';
import { referenceForward } from './reference-forward';
import { referenceGemmaForward } from './reference-gemma';
import { referenceQwenVision } from './reference-qwen-vision';
import { referenceVisionForward } from './reference-vision';
import type { WrittenVisionModel } from './write-vision-models';

type Json = Record<string, unknown>;

export interface VisionReference {
  /** The token each image row stands on in the expanded prompt. */
  imageTokenId: number;
  /** Log-probabilities [positions][vocab] of a causal pass over `tokens`, each image's rows on its run of image tokens (images in order). */
  logprobs(tokens: readonly number[], images: readonly PreprocessedImage[]): Float64Array[];
}

function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  const log = max + Math.log(sum);
  return Float64Array.from(logits, (v) => v - log);
}

/** Runs of `id` in `tokens`: [start, length] each, in order. */
function runsOf(tokens: readonly number[], id: number): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  tokens.forEach((t, i) => {
    if (t !== id) return;
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === i) last[1]++;
    else runs.push([i, 1]);
  });
  return runs;
}

/** Each image's rows placed on its run; a run whose length is not the image's row count is an error. */
function placeRows(tokens: readonly number[], id: number, rows: Float64Array[][]): Map<number, Float64Array> {
  const runs = runsOf(tokens, id);
  if (runs.length !== rows.length) throw new Error(`reference: ${runs.length} image runs for ${rows.length} images`);
  const placed = new Map<number, Float64Array>();
  runs.forEach(([start, length], i) => {
    if (length !== rows[i].length) throw new Error(`reference: image ${i} has ${rows[i].length} rows, its run ${length} tokens`);
    rows[i].forEach((row, r) => placed.set(start + r, row));
  });
  return placed;
}

function weightsOf(tensors: ReadonlyMap<string, { shape: number[]; data: Float32Array }>): ModelWeights {
  return {
    names: () => [...tensors.keys()],
    has: (name) => tensors.has(name),
    get: (name) => {
      const t = tensors.get(name);
      if (!t) throw new Error(`reference: no tensor ${name}`);
      return { kind: 'f32', shape: t.shape, data: t.data };
    },
  };
}

/** Gemma 3 and LLaVA-1.5 from what writeVisionHfDir returned. */
export function gemmaOrLlavaReference(family: 'gemma3' | 'llava', written: WrittenVisionModel): VisionReference {
  const json = written.json;
  const imageTokenId = json.image_token_index as number;
  const towerRows = (images: readonly PreprocessedImage[]) => images.map((image) => referenceVisionForward(family, json, written.vision, image.pixelValues));
  if (family === 'gemma3') {
    const plain = new Map([...written.text].map(([name, t]) => [name, t.data]));
    return {
      imageTokenId,
      // Gemma 3's image tokens see each other both ways (its token_type_ids mask).
      logprobs: (tokens, images) => {
        const imageRuns = runsOf(tokens, imageTokenId).map(([offset, length]) => ({ offset, length }));
        return referenceGemmaForward(json, plain, tokens, placeRows(tokens, imageTokenId, towerRows(images)), imageRuns).map(logSoftmax);
      },
    };
  }
  const text = json.text_config as Json;
  const n = (key: string) => text[key] as number;
  const config = llamaConfig({
    hiddenSize: n('hidden_size'), intermediateSize: n('intermediate_size'), numLayers: n('num_hidden_layers'), numHeads: n('num_attention_heads'),
    numKvHeads: n('num_key_value_heads'), vocabSize: n('vocab_size'), rmsNormEps: n('rms_norm_eps'), maxPositionEmbeddings: n('max_position_embeddings'),
    tieWordEmbeddings: false,
  });
  const weights = weightsOf(written.text);
  return {
    imageTokenId,
    logprobs: (tokens, images) => referenceForward(config, weights, tokens, undefined, placeRows(tokens, imageTokenId, towerRows(images))).map(logSoftmax),
  };
}

/**
 * Qwen2.5-VL's (t, h, w) positions for still images, as its get_rope_index lays them out: text
 * moves all three together; an image's merged grid starts at the next position, rows along h and
 * columns along w; text after it continues one past the largest position so far.
 */
export function qwenPositions(tokens: readonly number[], grids: ReadonlyArray<readonly [number, number]>): Int32Array {
  const n = tokens.length;
  const out = new Int32Array(3 * n);
  const runs = runsOf(tokens, IMAGE_PAD_ID);
  let next = 0;
  let at = 0;
  const put = (i: number, t: number, h: number, w: number) => {
    out[i] = t;
    out[n + i] = h;
    out[2 * n + i] = w;
  };
  runs.forEach(([start, length], image) => {
    for (; at < start; at++, next++) put(at, next, next, next);
    const [rows, cols] = grids[image];
    if (rows * cols !== length) throw new Error(`reference: a ${rows} x ${cols} grid for a run of ${length}`);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) put(at++, next, next + r, next + c);
    next += Math.max(rows, cols);
  });
  for (; at < n; at++, next++) put(at, next, next, next);
  return out;
}

/** Qwen2.5-VL from the seed writeQwenVlHfDir / writeQwenVlGguf were given. */
export function qwenVlReference(seed: number): VisionReference {
  const text: DecoderArchConfig = QWEN_VL_TEXT;
  const weights = weightsOf(new Map(qwenVlTextTensors(seed).map((t) => [t.name, t])));
  const tower = new Map(qwenVisionTensors(seed + 1).map((t) => [t.name, t.data]));
  const towerConfig = {
    depth: QWEN_VL_VISION.depth, hiddenSize: QWEN_VL_VISION.hidden_size, numHeads: QWEN_VL_VISION.num_heads, intermediateSize: QWEN_VL_VISION.intermediate_size,
    outHiddenSize: QWEN_VL_VISION.out_hidden_size, patchSize: QWEN_VL_VISION.patch_size, temporalPatchSize: QWEN_VL_VISION.temporal_patch_size,
    spatialMergeSize: QWEN_VL_VISION.spatial_merge_size, windowSize: QWEN_VL_VISION.window_size, fullAttentionBlocks: QWEN_VL_VISION.fullatt_block_indexes,
    normEps: 1e-6,
  };
  const merge = QWEN_VL_VISION.spatial_merge_size;
  return {
    imageTokenId: IMAGE_PAD_ID,
    logprobs: (tokens, images) => {
      const rows = images.map((image) => referenceQwenVision(towerConfig, (name) => tower.get(name)!, image.pixelValues, image.gridThw!));
      const grids = images.map((image) => [image.gridThw![1] / merge, image.gridThw![2] / merge] as const);
      return referenceForward(text, weights, tokens, undefined, placeRows(tokens, IMAGE_PAD_ID, rows), qwenPositions(tokens, grids)).map(logSoftmax);
    },
  };
}
