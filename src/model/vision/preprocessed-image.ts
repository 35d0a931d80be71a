// What a family's preprocessor hands the vision tower and the prompt builder.

export interface PreprocessedImage {
  /** Gemma 3, LLaVA: [1, 3, H, W] planes; LLaVA-NeXT: [1 + tiles, 3, H, W]; Qwen: [patches, 3 * temporal * patch * patch] rows. */
  pixelValues: Float32Array;
  shape: number[];
  /** Image tokens the language model sees for this image (the placeholder run in the prompt). */
  placeholderTokens: number;
  /** Qwen only: [t, h, w] in patches (image_grid_thw). */
  gridThw?: [number, number, number];
  /** LLaVA-NeXT only: the original size (transformers' image_sizes), whose aspect ratio the tile features are cut back to. */
  imageSize?: { width: number; height: number };
  /** LLaVA-NeXT only: the tiles after the base image, down and across. */
  tileGrid?: { rows: number; columns: number };
}
