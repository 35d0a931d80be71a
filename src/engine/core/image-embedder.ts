// The engine's encoder step: the rows a prefill chunk's image positions take. An image's rows
// come from the request (encoded before), else from the encoder cache by its hash, else from
// preprocessing and the tower now, synchronously in the step loop (the step waits for them).

import { RequestValidationError } from '../errors';
import { preprocessImage } from '../../model/vision/preprocess-image';
import { ImageInputError } from '../../model/vision/image-input-error';
import type { ImageEncoder, VisionModel } from '../../model/vision/vision-model';
import type { EncoderCache } from './encoder-cache';
import type { InputEmbedRows, RequestImages } from './request-images';

export class ImageEmbedder {
  constructor(
    private readonly vision: Pick<VisionModel, 'processorWith' | 'bidirectionalImages'>,
    private readonly encoder: ImageEncoder,
    /** null: --mm-processor-cache-gb 0, every request encodes its own images. */
    readonly cache: EncoderCache | null,
  ) {}

  get hiddenSize(): number {
    return this.encoder.hiddenSize;
  }

  /** Counts one cache query per image of a newly added request (vllm:mm_cache_*). */
  countQueries(images: RequestImages): void {
    for (const placement of images.placements) this.cache?.query(placement.hash);
  }

  /** An image's tokens attend each other both ways (VisionModel.bidirectionalImages): each run is computed in one step. */
  get bidirectional(): boolean {
    return this.vision.bidirectionalImages === true;
  }

  /**
   * The rows of prompt positions [start, start + count) that are image positions, encoding
   * what is not held yet. An image's own fault (ImageInputError) is a RequestValidationError.
   */
  embedsFor(images: RequestImages, start: number, count: number): InputEmbedRows[] | undefined {
    for (const i of images.overlapping(start, count)) if (!images.output(i)) images.hold(i, this.outputOf(images, i));
    return images.embedsFor(start, count, this.encoder.hiddenSize);
  }

  private outputOf(images: RequestImages, index: number): Float32Array {
    const placement = images.placements[index];
    const cached = this.cache?.get(placement.hash);
    if (cached) return cached;
    const { width, height, rgb } = images.pixelsOf(index);
    let rows: Float32Array;
    try {
      const processed = preprocessImage(this.vision.processorWith(images.processorKwargs), { width, height, data: rgb });
      if (processed.placeholderTokens !== placement.length) {
        throw new Error(`image ${index} has ${processed.placeholderTokens} image tokens, but the prompt holds ${placement.length} for it`);
      }
      rows = this.encoder.encode(processed);
    } catch (err) {
      if (err instanceof ImageInputError) throw new RequestValidationError(err.message, 'messages');
      throw err;
    }
    if (rows.length !== placement.length * this.encoder.hiddenSize) {
      throw new Error(`the image encoder gave ${rows.length} values for ${placement.length} rows of ${this.encoder.hiddenSize}`);
    }
    this.cache?.put(placement.hash, rows);
    return rows;
  }

  release(): Promise<void> {
    this.cache?.clear();
    return this.encoder.release();
  }
}
