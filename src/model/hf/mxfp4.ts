// MXFP4 (OCP microscaling FP4, gpt-oss's expert weights): blocks of 32 E2M1 values (1 sign, 2
// exponent, 1 mantissa bit) sharing one E8M0 exponent byte. Hugging Face checkpoints store them as
// `*_blocks` (uint8 [..., G, 16], element 2i in byte i's low nibble, 2i + 1 in its high one) and
// `*_scales` (uint8 [..., G], value = E2M1 * 2^(scale - 127)), as transformers' integrations/mxfp4.py
// reads them; GGUF's MXFP4 blocks (gguf/dequant.ts) hold the same values in another nibble order.

/** E2M1 value of each 4-bit code (bit 3 the sign). */
export const E2M1_VALUES: readonly number[] = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/**
 * Float32 values of an HF MXFP4 tensor pair: `blocks` of shape `shape` ([..., G, 16]) and `scales`
 * [..., G]; the result is [..., G * 32] row-major (for gpt-oss experts [E, out, in], the GGUF
 * conversion's layout; transformers transposes its own copy to [E, in, out]). No E8M0 NaN (255):
 * a scale of 255 gives 2^128, infinite as float32, as transformers computes it.
 */
export function dequantizeMxfp4Blocks(blocks: Uint8Array, scales: Uint8Array, shape: readonly number[]): Float32Array {
  if (shape.length < 2 || shape[shape.length - 1] !== 16) throw new Error(`MXFP4 blocks: shape [${shape.join(', ')}] does not end in 16 bytes per block`);
  const groups = shape.slice(0, -1).reduce((a, b) => a * b, 1);
  if (blocks.length !== groups * 16) throw new Error(`MXFP4 blocks: ${blocks.length} bytes for shape [${shape.join(', ')}]`);
  if (scales.length !== groups) throw new Error(`MXFP4 scales: ${scales.length} values, the blocks [${shape.join(', ')}] need ${groups}`);
  const out = new Float32Array(groups * 32);
  for (let g = 0; g < groups; g++) {
    const scale = 2 ** (scales[g] - 127);
    for (let i = 0; i < 16; i++) {
      const byte = blocks[g * 16 + i];
      out[g * 32 + 2 * i] = E2M1_VALUES[byte & 0x0f] * scale;
      out[g * 32 + 2 * i + 1] = E2M1_VALUES[byte >> 4] * scale;
    }
  }
  return out;
}
