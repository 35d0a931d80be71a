// MXFP4 blocks re-encoded as Q8_0 blocks, exactly: a block's values are c * 2^(e - 128) with c an
// integer in [-12, 12] (ggml's doubled E2M1 codes), so it is the Q8_0 block { d = 2^(e - 128),
// qs = c } whenever d is an IEEE half (2^-24 .. 2^15). The experts then stay 34 bytes per 32
// weights instead of 128 as float32, and every dequantized value is the same float (-0 reads +0).
// A block of only zeros is stored with d = 0, whatever its exponent.
import type { WeightTensor } from '../types';

/** ggml's kvalues_mxfp4: the E2M1 value of each 4-bit code (bit 3 the sign), doubled. */
const DOUBLED_E2M1 = new Int8Array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]);

const Q8_BLOCK_BYTES = 34;

/** The fp16 bits of 2^k, or -1 when 2^k is not a half (subnormal from 2^-24, normal to 2^15). */
export function halfPowerOfTwo(k: number): number {
  if (k >= -14 && k <= 15) return (k + 15) << 10;
  if (k >= -24 && k < -14) return 1 << (k + 24);
  return -1;
}

/**
 * Writes Q8_0 block `b` of `out` from one MXFP4 block: exponent byte `e` (value = code * 2^(e - 128))
 * and the 32 4-bit codes `codeAt(i)`. False when the block has a non-zero value and 2^(e - 128) is no half.
 */
function writeBlock(out: Uint8Array, b: number, e: number, codeAt: (i: number) => number): boolean {
  const at = b * Q8_BLOCK_BYTES;
  let nonZero = false;
  for (let i = 0; i < 32; i++) {
    const c = DOUBLED_E2M1[codeAt(i)];
    out[at + 2 + i] = c & 0xff;
    if (c !== 0) nonZero = true;
  }
  const d = nonZero ? halfPowerOfTwo(e - 128) : 0;
  if (d < 0) return false;
  out[at] = d & 0xff;
  out[at + 1] = d >> 8;
  return true;
}

/**
 * GGUF MXFP4 blocks (block_mxfp4 { uint8 e; uint8 qs[16] }: element j in qs[j]'s low nibble, j + 16
 * in its high one) of `numElements` values as Q8_0 blocks; null when a block's scale is no half.
 */
export function ggufMxfp4ToQ8_0(data: Uint8Array, numElements: number): Uint8Array | null {
  if (numElements % 32 !== 0) throw new Error(`MXFP4 to Q8_0: ${numElements} elements is not a multiple of 32`);
  const blocks = numElements / 32;
  if (data.byteLength < blocks * 17) throw new Error(`MXFP4 to Q8_0: need ${blocks * 17} bytes for ${numElements} elements, got ${data.byteLength}`);
  const out = new Uint8Array(blocks * Q8_BLOCK_BYTES);
  for (let b = 0; b < blocks; b++) {
    const at = b * 17 + 1;
    const codeAt = (i: number) => (i < 16 ? data[at + i] & 0x0f : data[at + i - 16] >> 4);
    if (!writeBlock(out, b, data[b * 17], codeAt)) return null;
  }
  return out;
}

/**
 * HF MXFP4 `*_blocks` (16 bytes a block: element 2i in byte i's low nibble, 2i + 1 in its high one)
 * and `*_scales` (value = E2M1 * 2^(scale - 127), the same as doubled * 2^(scale - 128)) as Q8_0
 * blocks; null when a block's scale is no half.
 */
export function hfMxfp4ToQ8_0(blocks: Uint8Array, scales: Uint8Array): Uint8Array | null {
  if (blocks.length !== scales.length * 16) throw new Error(`MXFP4 to Q8_0: ${blocks.length} block bytes for ${scales.length} scales`);
  const out = new Uint8Array(scales.length * Q8_BLOCK_BYTES);
  for (let b = 0; b < scales.length; b++) {
    const at = b * 16;
    const codeAt = (i: number) => (i & 1 ? blocks[at + (i >> 1)] >> 4 : blocks[at + (i >> 1)] & 0x0f);
    if (!writeBlock(out, b, scales[b], codeAt)) return null;
  }
  return out;
}

let warned = false;

/**
 * The tensor as Q8_0 when `q8` (the conversion) succeeded, else its float32 values (`widen`), with
 * one warning per process: widening is exact too, only four times the memory.
 */
export function mxfp4AsWeight(name: string, shape: number[], q8: Uint8Array | null, widen: () => Float32Array): WeightTensor {
  if (q8) return { kind: 'quantized', format: 'q8_0', shape, data: q8 };
  if (!warned) {
    warned = true;
    console.warn(`[mxfp4] ${name} has a block scale outside fp16's range, so it cannot be held as Q8_0; such tensors are widened to float32`);
  }
  return { kind: 'f32', shape, data: widen() };
}
