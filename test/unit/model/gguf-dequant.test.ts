// Dequantizers checked against blocks built from each format's definition (ggml-common.h layouts).
import { bf16ToF32, dequantize, f16ToF32, f32ToF16 } from '../../../src/model/gguf/dequant';
import { quantizeQ8_0 } from '../../../src/model/gguf/quantize';

function rng(seed: number): () => number {
  let s = seed;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296);
}
const randInt = (next: () => number, lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
const putF16 = (buf: Uint8Array, at: number, value: number) => {
  const h = f32ToF16(value);
  buf[at] = h & 0xff;
  buf[at + 1] = h >> 8;
};

describe('half floats', () => {
  it('round-trips exactly representable values and rounds to nearest even', () => {
    for (const v of [0, 1, -2, 0.5, 65504, 2 ** -24, -(2 ** -14), 0.333251953125]) expect(f16ToF32(f32ToF16(v))).toBe(v);
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // halfway between 1 and next: ties to even (1)
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(f32ToF16(1e6)).toBe(0x7c00);
    expect(f16ToF32(0x7c00)).toBe(Infinity);
    expect(Number.isNaN(f16ToF32(0x7e00))).toBe(true);
  });
  it('decodes bf16 as the top half of an f32', () => {
    expect(bf16ToF32(0x3f80)).toBe(1);
    expect(bf16ToF32(0xc040)).toBe(-3);
  });
});

describe('dequantize by block definition', () => {
  it('q8_0: w = d * q', () => {
    const next = rng(1);
    const data = new Uint8Array(2 * 34);
    const expected: number[] = [];
    for (let b = 0; b < 2; b++) {
      const d = 0.25 * (b + 1);
      putF16(data, b * 34, d);
      for (let i = 0; i < 32; i++) {
        const q = randInt(next, -128, 127);
        data[b * 34 + 2 + i] = q & 0xff;
        expected.push(d * q);
      }
    }
    expect(Array.from(dequantize('q8_0', data, 64))).toEqual(expected);
  });

  it('q4_0: element i in the low nibble of byte i, element i+16 in its high nibble, w = d * (q - 8)', () => {
    const next = rng(2);
    const data = new Uint8Array(18);
    putF16(data, 0, 0.125);
    const q = Array.from({ length: 32 }, () => randInt(next, 0, 15));
    for (let i = 0; i < 16; i++) data[2 + i] = q[i] | (q[i + 16] << 4);
    expect(Array.from(dequantize('q4_0', data, 32))).toEqual(q.map((v) => 0.125 * (v - 8)));
  });

  it('q4_k: 8 sub-blocks with 6-bit scales and mins, w = d * sc * q - dmin * m', () => {
    const next = rng(3);
    const data = new Uint8Array(144);
    const d = 0.0625, dmin = 0.03125;
    putF16(data, 0, d);
    putF16(data, 2, dmin);
    const sc = Array.from({ length: 8 }, () => randInt(next, 0, 63));
    const m = Array.from({ length: 8 }, () => randInt(next, 0, 63));
    // scales[12]: bytes 0-3 = sc[0..3] (6 bits) | high 2 bits of sc[4..7]; bytes 4-7 the same for m;
    // bytes 8-11 = low 4 bits of sc[4..7] | low 4 bits of m[4..7] << 4.
    for (let j = 0; j < 4; j++) {
      data[4 + j] = sc[j] | ((sc[j + 4] >> 4) << 6);
      data[4 + j + 4] = m[j] | ((m[j + 4] >> 4) << 6);
      data[4 + j + 8] = (sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4);
    }
    // qs[128]: 32-byte groups; group g holds sub-block 2g in its low nibbles and 2g+1 in its high nibbles.
    const q = Array.from({ length: 256 }, () => randInt(next, 0, 15));
    for (let s = 0; s < 8; s++) {
      for (let l = 0; l < 32; l++) data[16 + (s >> 1) * 32 + l] |= q[s * 32 + l] << (s & 1 ? 4 : 0);
    }
    const expected = q.map((v, e) => d * sc[e >> 5] * v - dmin * m[e >> 5]);
    const got = dequantize('q4_k', data, 256);
    expected.forEach((v, i) => expect(got[i]).toBeCloseTo(v, 5));
  });

  it('q6_k: 16 sub-blocks of 16 with int8 scales, 6-bit q split over ql/qh, w = d * sc * (q - 32)', () => {
    const next = rng(4);
    const data = new Uint8Array(210);
    const d = 0.015625;
    const scales = Array.from({ length: 16 }, () => randInt(next, -128, 127));
    const q = Array.from({ length: 256 }, () => randInt(next, 0, 63));
    scales.forEach((s, i) => (data[192 + i] = s & 0xff));
    putF16(data, 208, d);
    // Element e: half n = e>>7, quarter c = (e>>5)&3, lane l = e&31. Low 4 bits in
    // ql[n*64 + (c&1)*32 + l] (low nibble for c<2, high for c>=2), high 2 bits in qh[n*32 + l] at bit 2c;
    // its scale is scales[n*8 + 2c + (l>>4)].
    const expected: number[] = [];
    q.forEach((v, e) => {
      const n = e >> 7, c = (e >> 5) & 3, l = e & 31;
      data[n * 64 + (c & 1) * 32 + l] |= (v & 0xf) << (c < 2 ? 0 : 4);
      data[128 + n * 32 + l] |= (v >> 4) << (2 * c);
      expected.push(d * scales[n * 8 + 2 * c + (l >> 4)] * (v - 32));
    });
    const got = dequantize('q6_k', data, 256);
    expected.forEach((v, i) => expect(got[i]).toBeCloseTo(v, 6));
  });

  it('rejects element counts that are not whole blocks or data that is too short', () => {
    expect(() => dequantize('q8_0', new Uint8Array(34), 31)).toThrow(/multiple of the block size 32/);
    expect(() => dequantize('q6_k', new Uint8Array(100), 256)).toThrow(/need 210 bytes/);
  });
});

describe('Q8_0 encoder', () => {
  it('encodes d = max|x| / 127 and q = round(x / d), within half a step', () => {
    const next = rng(5);
    const values = Float32Array.from({ length: 96 }, () => next() * 2 - 1);
    const back = dequantize('q8_0', quantizeQ8_0(values), values.length);
    for (let b = 0; b < 96; b += 32) {
      const amax = Math.max(...Array.from(values.subarray(b, b + 32), Math.abs));
      const d = f16ToF32(f32ToF16(amax / 127));
      for (let i = b; i < b + 32; i++) expect(Math.abs(back[i] - values[i])).toBeLessThanOrEqual(d / 2 + 127 * Math.abs(d - amax / 127) + 1e-7);
    }
    const zeros = quantizeQ8_0(new Float32Array(32));
    expect(Array.from(dequantize('q8_0', zeros, 32))).toEqual(new Array(32).fill(0));
  });
});
