// Q8_0 blocks as the blockwise 8-bit layout of onnxruntime's QMoE (expert_weight_bits 8,
// block_size 32, no zero points): one uint8 per weight holding q + 128 (the op's default zero
// point for 8 bits) and one float scale per 32 weights. Every (q + 128 - 128) * d is the Q8_0 value.
import { readF16 } from '../gguf/half';

/** The codes [elements] and scales [elements / 32] of `elements` Q8_0-coded weights. */
export function q8ToBlockwise(data: Uint8Array, elements: number): { codes: Uint8Array; scales: Float32Array } {
  const blocks = elements / 32;
  if (!Number.isInteger(blocks) || data.length !== blocks * 34) throw new Error(`Q8_0 blocks: ${data.length} bytes for ${elements} weights`);
  const codes = new Uint8Array(elements);
  const scales = new Float32Array(blocks);
  for (let b = 0; b < blocks; b++) {
    scales[b] = readF16(data, b * 34);
    for (let i = 0; i < 32; i++) codes[b * 32 + i] = (data[b * 34 + 2 + i] + 128) & 0xff;
  }
  return { codes, scales };
}
