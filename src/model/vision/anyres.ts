// LLaVA-NeXT's "anyres" geometry, as transformers' llava_next image processing and modeling code
// and vLLM's llava_next define it: the grid resolution an image is tiled at
// (select_best_resolution over image_grid_pinpoints), the size it is resized to inside that
// resolution before padding, and the part of the tile grid's features that is the image itself
// (unpad_image). Sizes are (height, width) as transformers' pinpoints are.

export type HeightWidth = readonly [height: number, width: number];

/** transformers' select_best_resolution: the pinpoint keeping the most of the image, then wasting the least. */
export function selectBestResolution(height: number, width: number, pinpoints: readonly HeightWidth[]): HeightWidth {
  let best: HeightWidth | undefined;
  let bestEffective = 0;
  let bestWasted = Infinity;
  for (const [h, w] of pinpoints) {
    const scale = Math.min(w / width, h / height);
    const effective = Math.min(Math.trunc(width * scale) * Math.trunc(height * scale), width * height);
    const wasted = w * h - effective;
    if (effective > bestEffective || (effective === bestEffective && wasted < bestWasted)) {
      best = [h, w];
      bestEffective = effective;
      bestWasted = wasted;
    }
  }
  if (!best) throw new Error('image_grid_pinpoints is empty');
  return best;
}

/** transformers' _get_patch_output_size: the image scaled to fit `target`, the fitted side exact, the other rounded up. */
export function patchOutputSize(height: number, width: number, [targetHeight, targetWidth]: HeightWidth): HeightWidth {
  const scaleW = targetWidth / width;
  const scaleH = targetHeight / height;
  if (scaleW < scaleH) return [Math.min(Math.ceil(height * scaleW), targetHeight), targetWidth];
  return [targetHeight, Math.min(Math.ceil(width * scaleH), targetWidth)];
}

/** get_anyres_image_grid_shape: tiles down and across at the image's best resolution. */
export function anyresGrid(height: number, width: number, pinpoints: readonly HeightWidth[], tileSide: number): { rows: number; columns: number } {
  const [h, w] = selectBestResolution(height, width, pinpoints);
  return { rows: Math.floor(h / tileSide), columns: Math.floor(w / tileSide) };
}

/** Python's int(round(x, 7)): the rounding absorbs float error just below a whole number. */
function truncRounded7(x: number): number {
  return Math.trunc(Math.round(x * 1e7) / 1e7);
}

/**
 * unpad_image on a feature grid of `gridHeight` x `gridWidth` for an image of `height` x `width`:
 * the rows or columns of padding on each side are dropped (the same count on both, so an odd
 * remainder stays in). Returns the kept window.
 */
export function unpaddedRegion(height: number, width: number, gridHeight: number, gridWidth: number): { top: number; left: number; height: number; width: number } {
  if (width / height > gridWidth / gridHeight) {
    const newHeight = truncRounded7(height * (gridWidth / width));
    const padding = Math.floor((gridHeight - newHeight) / 2);
    return { top: padding, left: 0, height: gridHeight - 2 * padding, width: gridWidth };
  }
  const newWidth = truncRounded7(width * (gridHeight / height));
  const padding = Math.floor((gridWidth - newWidth) / 2);
  return { top: 0, left: padding, height: gridHeight, width: gridWidth - 2 * padding };
}
