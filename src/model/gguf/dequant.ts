// Dequantizers for the GGML block formats we accept, following ggml's reference
// dequantize_row_* (ggml/src/ggml-quants.c). Used by the loader's tests and by the
// graph builder when it needs f32 (e.g. embeddings or formats MatMulNBits cannot take).
import type { QuantFormat } from '../types';
import { QUANT_BLOCK } from './ggml-types';
import { readF16 } from './half';

export { f16ToF32, bf16ToF32, f32ToF16 } from './half';

/** Dequantizes `numElements` values (a whole number of blocks) of `data` in `format`. */
export function dequantize(format: QuantFormat, data: Uint8Array, numElements: number): Float32Array {
  return dequantizeInto(format, data, numElements, new Float32Array(numElements), 0);
}

/** dequantize, writing into `out` from index `at` (no new buffer per row); returns `out`. */
export function dequantizeInto(format: QuantFormat, data: Uint8Array, numElements: number, out: Float32Array, at: number): Float32Array {
  const { blockSize, blockBytes } = QUANT_BLOCK[format];
  if (numElements % blockSize !== 0) {
    throw new Error(`dequantize ${format}: ${numElements} elements is not a multiple of the block size ${blockSize}`);
  }
  const blocks = numElements / blockSize;
  if (data.byteLength < blocks * blockBytes) {
    throw new Error(`dequantize ${format}: need ${blocks * blockBytes} bytes for ${numElements} elements, got ${data.byteLength}`);
  }
  if (at + numElements > out.length) throw new Error(`dequantize ${format}: ${numElements} elements at ${at} do not fit ${out.length}`);
  const decodeBlock = BLOCK_DECODERS[format];
  for (let b = 0; b < blocks; b++) decodeBlock(data, b * blockBytes, out, at + b * blockSize);
  return out;
}

/** ggml's kvalues_mxfp4: the E2M1 values doubled (the scale is halved to match). */
const MXFP4_DOUBLED = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/**
 * `numElements` values of GGUF MXFP4 blocks (block_mxfp4 { uint8 e; uint8 qs[16]; }): byte j of qs
 * holds element j (low nibble) and j + 16 (high), w = kvalues_mxfp4[q] * 2^(e - 128), as ggml's
 * dequantize_row_mxfp4 (its E8M0 half: e = 255 is 2^127, not NaN).
 */
export function dequantizeMxfp4(data: Uint8Array, numElements: number): Float32Array {
  if (numElements % 32 !== 0) throw new Error(`dequantize MXFP4: ${numElements} elements is not a multiple of 32`);
  const blocks = numElements / 32;
  if (data.byteLength < blocks * 17) throw new Error(`dequantize MXFP4: need ${blocks * 17} bytes for ${numElements} elements, got ${data.byteLength}`);
  const out = new Float32Array(numElements);
  for (let b = 0; b < blocks; b++) {
    const at = b * 17;
    const d = 2 ** (data[at] - 128);
    for (let j = 0; j < 16; j++) {
      const q = data[at + 1 + j];
      out[b * 32 + j] = MXFP4_DOUBLED[q & 0x0f] * d;
      out[b * 32 + j + 16] = MXFP4_DOUBLED[q >> 4] * d;
    }
  }
  return out;
}

type BlockDecoder = (src: Uint8Array, at: number, out: Float32Array, to: number) => void;

const int8 = (byte: number): number => (byte << 24) >> 24;

// block_q8_0 { f16 d; int8 qs[32]; }  w = d * q
function decodeQ8_0(src: Uint8Array, at: number, out: Float32Array, to: number): void {
  const d = readF16(src, at);
  for (let i = 0; i < 32; i++) out[to + i] = d * int8(src[at + 2 + i]);
}

// block_q4_0 { f16 d; uint8 qs[16]; }  low nibbles are elements 0..15, high nibbles 16..31; w = d * (q - 8)
function decodeQ4_0(src: Uint8Array, at: number, out: Float32Array, to: number): void {
  const d = readF16(src, at);
  for (let i = 0; i < 16; i++) {
    const q = src[at + 2 + i];
    out[to + i] = d * ((q & 0x0f) - 8);
    out[to + i + 16] = d * ((q >> 4) - 8);
  }
}

/** 6-bit (scale, min) of sub-block j from the 12 packed bytes of a q4_K block (ggml's get_scale_min_k4). */
export function scaleMinK4(src: Uint8Array, scalesAt: number, j: number): [number, number] {
  const q = (k: number) => src[scalesAt + k];
  if (j < 4) return [q(j) & 63, q(j + 4) & 63];
  return [(q(j + 4) & 0x0f) | ((q(j - 4) >> 6) << 4), (q(j + 4) >> 4) | ((q(j) >> 6) << 4)];
}

// block_q4_K { f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]; }: 8 sub-blocks of 32,
// w = d * sc * q - dmin * m. Each 32 bytes of qs hold two sub-blocks (low nibbles, then high).
function decodeQ4_K(src: Uint8Array, at: number, out: Float32Array, to: number): void {
  const d = readF16(src, at);
  const dmin = readF16(src, at + 2);
  const scalesAt = at + 4;
  let qs = at + 16;
  let y = to;
  for (let j = 0; j < 8; j += 2) {
    const [sc1, m1] = scaleMinK4(src, scalesAt, j);
    const [sc2, m2] = scaleMinK4(src, scalesAt, j + 1);
    const d1 = d * sc1, min1 = dmin * m1, d2 = d * sc2, min2 = dmin * m2;
    for (let l = 0; l < 32; l++) out[y + l] = d1 * (src[qs + l] & 0x0f) - min1;
    for (let l = 0; l < 32; l++) out[y + 32 + l] = d2 * (src[qs + l] >> 4) - min2;
    qs += 32;
    y += 64;
  }
}

// block_q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d; }: 16 sub-blocks of 16,
// 6-bit q = 4 low bits from ql, 2 high bits from qh, w = d * scale * (q - 32).
function decodeQ6_K(src: Uint8Array, at: number, out: Float32Array, to: number): void {
  const d = readF16(src, at + 208);
  let ql = at, qh = at + 128, sc = at + 192, y = to;
  for (let half = 0; half < 2; half++) {
    for (let l = 0; l < 32; l++) {
      const is = l >> 4;
      const h = src[qh + l];
      const q1 = ((src[ql + l] & 0x0f) | (((h >> 0) & 3) << 4)) - 32;
      const q2 = ((src[ql + l + 32] & 0x0f) | (((h >> 2) & 3) << 4)) - 32;
      const q3 = ((src[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
      const q4 = ((src[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
      out[y + l] = d * int8(src[sc + is]) * q1;
      out[y + l + 32] = d * int8(src[sc + is + 2]) * q2;
      out[y + l + 64] = d * int8(src[sc + is + 4]) * q3;
      out[y + l + 96] = d * int8(src[sc + is + 6]) * q4;
    }
    ql += 64;
    qh += 32;
    sc += 8;
    y += 128;
  }
}

const BLOCK_DECODERS: Record<QuantFormat, BlockDecoder> = {
  q8_0: decodeQ8_0,
  q4_0: decodeQ4_0,
  q4_k: decodeQ4_K,
  q6_k: decodeQ6_K,
};
