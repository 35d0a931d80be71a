// What the engine needs to know about an encoder-decoder model's encoder: the size of one
// request's encoder input and how many positions of cross-attention K/V it leaves in the KV cache.
// Decoder-only models have none.
import type { ModelArchConfig } from './types';

export interface EncoderSpec {
  /** Values in one encoder input (Whisper: mel bins x frames). */
  inputSize: number;
  /** Cross-attention K/V positions per request, per decoder layer (Whisper: 1500). */
  positions: number;
}

export function encoderSpecOf(config: ModelArchConfig): EncoderSpec | null {
  const encoder = config.encoder;
  if (!encoder) return null;
  return { inputSize: encoder.numMelBins * 2 * encoder.numPositions, positions: encoder.numPositions };
}
