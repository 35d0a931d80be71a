// A test-only vision side: a tiny, deterministic ImageEncoder that is a real function of the
// preprocessed pixels (each output row mixes every pixel value with its own seeded weights), and
// a VisionModel around it with a small Gemma 3 processor (stretch to 8 x 8, a few tokens each).
import type { PreprocessedImage } from '../../src/model/vision/preprocessed-image';
import type { Gemma3ProcessorConfig } from '../../src/model/vision/processor-config';
import type { ImageEncoder, ImagePromptFormat, VisionModel } from '../../src/model/vision/vision-model';
import type { DecodedImage } from '../../src/engine/types';

export class PixelEncoder implements ImageEncoder {
  /** Images encoded so far (cache hits do not encode). */
  calls = 0;

  constructor(
    readonly hiddenSize: number,
    private readonly seed = 7,
  ) {}

  encode(image: PreprocessedImage): Float32Array {
    this.calls++;
    const rows = image.placeholderTokens;
    const px = image.pixelValues;
    const out = new Float32Array(rows * this.hiddenSize);
    for (let r = 0; r < rows; r++) {
      for (let h = 0; h < this.hiddenSize; h++) {
        let sum = 0;
        for (let j = 0; j < px.length; j++) sum += px[j] * Math.sin(this.seed + 0.37 * j + 1.3 * r + 0.71 * h);
        out[r * this.hiddenSize + h] = Math.tanh(sum / Math.sqrt(px.length));
      }
    }
    return out;
  }

  release(): Promise<void> {
    return Promise.resolve();
  }
}

/** A Gemma 3 processor at 8 x 8 pixels and `tokensPerImage` image tokens. */
export function tinyGemma3Processor(tokensPerImage: number): Gemma3ProcessorConfig {
  return {
    family: 'gemma3',
    size: { width: 8, height: 8 },
    tokensPerImage,
    resample: 'bilinear',
    normalization: { rescaleFactor: 1 / 255, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] },
    geometry: 'hf',
  };
}

export interface TestVisionOptions {
  encoder: ImageEncoder;
  tokensPerImage: number;
  prompt: ImagePromptFormat;
}

/** A VisionModel whose tower is `encoder` (weights present, so the engine builds it). */
export function testVisionModel({ encoder, tokensPerImage, prompt }: TestVisionOptions): VisionModel {
  const processor = tinyGemma3Processor(tokensPerImage);
  return {
    family: 'gemma3',
    source: 'test-pixel-encoder',
    processor,
    processorWith(kwargs) {
      const unknown = Object.keys(kwargs);
      if (unknown.length > 0) throw new Error(`unknown mm_processor_kwargs: ${unknown.join(', ')}`);
      return processor;
    },
    prompt,
    weights: { names: () => [], has: () => false, get: () => { throw new Error('no tensors'); } },
    createEncoder: () => Promise.resolve(encoder),
  };
}

/** A `width` x `height` image whose pixels follow `seed`. */
export function seededImage(width: number, height: number, seed: number): DecodedImage {
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < rgb.length; i++) rgb[i] = (i * 37 + seed * 101 + ((i * seed) % 13)) & 255;
  return { width, height, rgb };
}
