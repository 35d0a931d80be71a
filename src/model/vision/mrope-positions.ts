// Qwen2-VL's multimodal rotary positions for a prompt (vLLM's get_input_positions / transformers'
// get_rope_index, images only). Text tokens advance all three of (t, h, w) together; an image's
// run of tokens takes its merged patch grid: t = 0 for a still image, h and w its row and column,
// all offset by where the image starts. Text after an image resumes one past the largest position
// any earlier token took, so positions run ahead of or behind token indices by `delta`.
import type { MropeSpec } from './vision-model';

export interface MropeImage {
  /** Prompt index of the image's first image token. */
  offset: number;
  /** The image's grid in patches before merging (PreprocessedImage.gridThw, image_grid_thw). */
  gridThw: readonly [number, number, number];
}

/**
 * positions: [3 * tokens] — every token's t, then every token's h, then every token's w (vLLM's
 * [3, seq] layout). delta: what a token after the prompt adds to its index (max position + 1 - length).
 */
export function mropePositions(promptTokens: readonly number[], images: readonly MropeImage[], spec: MropeSpec): { positions: Int32Array; delta: number } {
  const n = promptTokens.length;
  const positions = new Int32Array(3 * n);
  const set = (index: number, t: number, h: number, w: number) => {
    positions[index] = t;
    positions[n + index] = h;
    positions[2 * n + index] = w;
  };
  let next = 0; // the position the next text token takes
  let at = 0;
  for (const image of images) {
    const [t, h, w] = image.gridThw;
    // A clip's frames would take t positions spaced by its frame rate (Qwen2.5-VL's tokens_per_second): not offered.
    if (t !== 1) throw new Error(`M-RoPE positions are for still images (t = 1), got an image grid with t = ${t}`);
    const m = spec.spatialMergeSize;
    if (h % m || w % m) throw new Error(`an image grid of ${h} x ${w} patches does not divide into ${m} x ${m} merge blocks`);
    const rows = h / m;
    const columns = w / m;
    const length = rows * columns;
    if (image.offset < at || image.offset + length > n) {
      throw new Error(`an image's ${length} tokens at prompt index ${image.offset} do not fit the prompt (${n} tokens, previous image ends at ${at})`);
    }
    for (; at < image.offset; at++, next++) set(at, next, next, next);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < columns; c++, at++) set(at, next, next + r, next + c);
    }
    next += Math.max(rows, columns);
  }
  for (; at < n; at++, next++) set(at, next, next, next);
  return { positions, delta: next - n };
}
