// MXFP4 re-encoded as Q8_0 at load: both layouts' blocks, over every code and every exponent whose
// scale is a half, dequantize to the same floats as MXFP4 itself; blocks whose scale is no half
// are refused (the loader then widens the tensor to float32); Q8_0 feeds QMoE's 8-bit layout.
import { dequantize, dequantizeMxfp4 } from '../../../src/model/gguf/dequant';
import { ggufMxfp4ToQ8_0, halfPowerOfTwo, hfMxfp4ToQ8_0, mxfp4AsWeight } from '../../../src/model/gguf/mxfp4-to-q8';
import { f16ToF32 } from '../../../src/model/gguf/half';
import { q8ToBlockwise } from '../../../src/model/graph/q8-blockwise';
import { dequantizeMxfp4Blocks } from '../../../src/model/hf/mxfp4';

/** Every exponent byte whose scale 2^(e - 128) is a half (2^-24 .. 2^15). */
const EXPONENTS = Array.from({ length: 40 }, (_, i) => 104 + i);

/** HF blocks: per exponent, one block of all 16 codes twice over (pairs (c, 15 - c)), shifted per block. */
function hfBlocksOverEveryCode(exponents: readonly number[]): { blocks: Uint8Array; scales: Uint8Array } {
  const blocks = new Uint8Array(exponents.length * 16);
  exponents.forEach((_, b) => {
    for (let i = 0; i < 16; i++) {
      const low = (i + b) % 16;
      blocks[b * 16 + i] = low | ((15 - low) << 4);
    }
  });
  return { blocks, scales: Uint8Array.from(exponents) };
}

/** The same values in GGUF's block_mxfp4 (element j low nibble of qs[j], j + 16 high). */
function toGgufLayout(blocks: Uint8Array, scales: Uint8Array): Uint8Array {
  const out = new Uint8Array(scales.length * 17);
  for (let g = 0; g < scales.length; g++) {
    const code = (k: number) => (blocks[g * 16 + (k >> 1)] >> (4 * (k & 1))) & 0xf;
    out[g * 17] = scales[g];
    for (let j = 0; j < 16; j++) out[g * 17 + 1 + j] = code(j) | (code(j + 16) << 4);
  }
  return out;
}

/** The floats' bit patterns, with -0 read as +0 (Q8_0 has no -0; E2M1 code 8 is -0 in transformers). */
const bits = (a: Float32Array) => Array.from(new Uint32Array(Float32Array.from(a, (x) => x + 0).buffer));

describe('MXFP4 as Q8_0', () => {
  it('halfPowerOfTwo gives the fp16 bits of 2^k from 2^-24 (subnormal) to 2^15, and -1 outside', () => {
    for (let k = -24; k <= 15; k++) expect(f16ToF32(halfPowerOfTwo(k))).toBe(2 ** k);
    expect([halfPowerOfTwo(-25), halfPowerOfTwo(16)]).toEqual([-1, -1]);
  });

  it('HF blocks/scales: every code at every representable exponent dequantizes to the same floats', () => {
    const { blocks, scales } = hfBlocksOverEveryCode(EXPONENTS);
    const q8 = hfMxfp4ToQ8_0(blocks, scales)!;
    expect(q8.length).toBe(EXPONENTS.length * 34);
    const want = dequantizeMxfp4Blocks(blocks, scales, [EXPONENTS.length, 16]);
    expect(bits(dequantize('q8_0', q8, want.length))).toEqual(bits(want));
    // The test covers the extremes it claims: values from 0.5 * 2^-23 up to 6 * 2^16.
    expect(Math.min(...want.filter((x) => x > 0))).toBe(2 ** -24);
    expect(Math.max(...want)).toBe(6 * 2 ** 16);
  });

  it('GGUF blocks: every code at every representable exponent dequantizes to the same floats, bit for bit', () => {
    const { blocks, scales } = hfBlocksOverEveryCode(EXPONENTS);
    const gguf = toGgufLayout(blocks, scales);
    const q8 = ggufMxfp4ToQ8_0(gguf, EXPONENTS.length * 32)!;
    const want = dequantizeMxfp4(gguf, EXPONENTS.length * 32);
    const got = dequantize('q8_0', q8, want.length);
    expect(Buffer.from(got.buffer).equals(Buffer.from(want.buffer))).toBe(true);
    expect(bits(want)).toEqual(bits(dequantizeMxfp4Blocks(blocks, scales, [EXPONENTS.length, 16])));
  });

  it('refuses a non-zero block whose scale is no half, and stores an all-zero block with d = 0 at any exponent', () => {
    for (const e of [103, 144, 0, 255]) {
      const { blocks, scales } = hfBlocksOverEveryCode([120, e]);
      expect(hfMxfp4ToQ8_0(blocks, scales)).toBeNull();
      expect(ggufMxfp4ToQ8_0(toGgufLayout(blocks, scales), 64)).toBeNull();
    }
    // Codes 0 and 8 (+0 and -0) only, exponent 255: zero stays zero.
    const zeros = Uint8Array.from({ length: 16 }, (_, i) => (i % 2 ? 0x80 : 0x08));
    const q8 = hfMxfp4ToQ8_0(zeros, Uint8Array.from([255]))!;
    expect([q8[0], q8[1]]).toEqual([0, 0]);
    expect(Array.from(dequantize('q8_0', q8, 32))).toEqual(new Array(32).fill(0));
  });

  it('keeps the tensor as Q8_0 when converted, else widens it to float32 (the exact fallback)', () => {
    const { blocks, scales } = hfBlocksOverEveryCode([110, 150]);
    const widen = () => dequantizeMxfp4Blocks(blocks, scales, [2, 16]);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const fallback = mxfp4AsWeight('w', [2, 32], hfMxfp4ToQ8_0(blocks, scales), widen);
    expect(fallback).toMatchObject({ kind: 'f32', shape: [2, 32] });
    expect(fallback.kind === 'f32' && bits(fallback.data)).toEqual(bits(widen()));
    expect(warn).toHaveBeenCalledTimes(1);
    warn.mockRestore();
    const kept = mxfp4AsWeight('w', [1, 32], hfMxfp4ToQ8_0(blocks.subarray(0, 16), scales.subarray(0, 1)), widen);
    expect(kept).toMatchObject({ kind: 'quantized', format: 'q8_0', shape: [1, 32] });
    expect(kept.kind === 'quantized' && kept.data.length).toBe(34);
  });

  it("Q8_0 as QMoE's blockwise 8-bit layout: (code - 128) * scale is the Q8_0 value", () => {
    const { blocks, scales } = hfBlocksOverEveryCode(EXPONENTS);
    const q8 = hfMxfp4ToQ8_0(blocks, scales)!;
    const { codes, scales: blockScales } = q8ToBlockwise(q8, EXPONENTS.length * 32);
    const values = Float32Array.from(codes, (c, i) => (c - 128) * blockScales[i >> 5]);
    expect(bits(values)).toEqual(bits(dequantize('q8_0', q8, values.length)));
    expect(() => q8ToBlockwise(q8, 48)).toThrow(/bytes for 48 weights/);
  });
});
