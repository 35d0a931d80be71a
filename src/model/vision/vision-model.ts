// A vision-language model's image side, as the loader finds it beside the text model: a Hugging
// Face directory's vision_config + projector weights, or a GGUF text model's llama.cpp mmproj
// file (vLLM's rule: an `mmproj*.gguf` in the same directory). The serving side reads the
// processor and the prompt format (no weights); the engine worker builds the ImageEncoder.
import type { ModelWeights } from '../types';
import type { PreprocessedImage } from './preprocessed-image';
import type { ImageProcessorConfig, VisionFamily } from './processor-config';

export interface VisionModel {
  family: VisionFamily;
  /** Where the tower's weights are: the HF directory or the mmproj GGUF path. */
  source: string;
  /** The processor config with --mm-processor-kwargs applied. */
  processor: ImageProcessorConfig;
  /** The processor config with a request's merged mm_processor_kwargs applied (throws a plain Error naming a bad key). */
  processorWith(kwargs: Record<string, unknown>): ImageProcessorConfig;
  /** How an image appears in the prompt's tokens. */
  prompt: ImagePromptFormat;
  /** Models whose language model rotates by (t, h, w) positions (Qwen2-VL / Qwen2.5-VL); absent: 1-D positions. */
  mrope?: MropeSpec;
  /**
   * An image's tokens attend each other in both directions in the language model (Gemma 3's
   * token_type_ids mask; vLLM's mm_prefix_range): the engine computes each image's run in one step.
   */
  bidirectionalImages?: boolean;
  /** The tower and projector weights (null where loaded without weights, as the HTTP side loads). */
  weights: ModelWeights | null;
  /** Builds the tower + projector (the engine worker calls it once, on a model loaded with weights). */
  createEncoder(opts: ImageEncoderOptions): Promise<ImageEncoder>;
}

/**
 * The prompt side of an image (vLLM's PromptReplacement): the chat template leaves
 * `placeholderTokenId` once per image; the serving side replaces each with
 * `prefix`, `imageTokenId` x (the image's placeholderTokens), `suffix`, and the encoder's rows
 * take the positions of that run of `imageTokenId`, in order.
 */
export interface ImagePromptFormat {
  /** What a template without image handling would print for one image (vLLM's placeholder string). */
  placeholderText: string;
  /** The token the template's placeholder leaves once per image (Gemma 3 <start_of_image>, LLaVA <image>, Qwen <|image_pad|>). */
  placeholderTokenId: number;
  /** The token repeated once per embedding row. */
  imageTokenId: number;
  /** Token ids before the run (Gemma 3: "\n\n" and <start_of_image>), and after it (<end_of_image>, "\n\n"). */
  prefix: readonly number[];
  suffix: readonly number[];
}

/** Qwen2-VL's multimodal RoPE: the rotary half-dimensions taken by t, h and w, and how image positions are laid out. */
export interface MropeSpec {
  /** mrope_section: [t, h, w] half-dims, summing to the rotary half. */
  section: readonly [number, number, number];
  /** Patches merged per side (2): an image's h x w position grid is its patch grid / merge. */
  spatialMergeSize: number;
}

export interface ImageEncoderOptions {
  /** Threads of the tower's session (unset: every core). */
  intraOpThreads?: number;
}

/** The tower + projector: a preprocessed image in, the language model's input rows for its image tokens out. */
export interface ImageEncoder {
  /** Rows of the language model's hidden size. */
  readonly hiddenSize: number;
  /** [image.placeholderTokens, hiddenSize] float32, synchronous (the worker's step loop runs it between steps). */
  encode(image: PreprocessedImage): Float32Array;
  release(): Promise<void>;
}
