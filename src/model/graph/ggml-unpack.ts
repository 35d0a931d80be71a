// Unpacks GGML quantized blocks into (integer code, per-block scale, per-block zero point) so
// they can be re-packed for MatMulNBits without losing precision: every format here is exactly
// w = scale * (q - zeroPoint) over fixed-size sub-blocks. Block layouts follow
// ggml/src/ggml-common.h and dequantize_row_* in ggml-quants.c.
import { scaleMinK4 } from '../gguf/dequant';
import { readF16 } from '../gguf/half';
import { QuantFormat } from '../types';

export interface UnpackedQuant {
  bits: 4 | 8;
  /** Elements per scale (MatMulNBits block_size). */
  blockSize: number;
  /** One code per element, row-major [rows, cols]. */
  codes: Uint8Array;
  /** [rows * cols / blockSize] */
  scales: Float32Array;
  /** Float zero points (q4_k), uint8 zero points (q6_k), or null for MatMulNBits' default 2^(bits-1). */
  zeroPoints: Float32Array | Uint8Array | null;
}

/** Returns null when the blocks cannot be represented exactly (a q4_k sub-block with scale 0 but an offset). */
export function unpackGgml(format: QuantFormat, data: Uint8Array, elements: number): UnpackedQuant | null {
  switch (format) {
    case 'q4_0':
      return unpackQ4_0(data, elements);
    case 'q8_0':
      return unpackQ8_0(data, elements);
    case 'q4_k':
      return unpackQ4K(data, elements);
    case 'q6_k':
      return unpackQ6K(data, elements);
  }
}

// block_q4_0 { f16 d; u8 qs[16] }: element i < 16 is qs[i] & 15, element i + 16 is qs[i] >> 4; w = d (q - 8).
function unpackQ4_0(data: Uint8Array, elements: number): UnpackedQuant {
  const blocks = elements / 32;
  const codes = new Uint8Array(elements);
  const scales = new Float32Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const at = b * 18;
    scales[b] = readF16(data, at);
    for (let i = 0; i < 16; i++) {
      const byte = data[at + 2 + i];
      codes[b * 32 + i] = byte & 15;
      codes[b * 32 + i + 16] = byte >> 4;
    }
  }
  return { bits: 4, blockSize: 32, codes, scales, zeroPoints: null };
}

// block_q8_0 { f16 d; i8 qs[32] }: w = d q. Stored as q + 128 with the default 8-bit zero point 128.
function unpackQ8_0(data: Uint8Array, elements: number): UnpackedQuant {
  const blocks = elements / 32;
  const codes = new Uint8Array(elements);
  const scales = new Float32Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const at = b * 34;
    scales[b] = readF16(data, at);
    for (let i = 0; i < 32; i++) codes[b * 32 + i] = (data[at + 2 + i] + 128) & 255;
  }
  return { bits: 8, blockSize: 32, codes, scales, zeroPoints: null };
}

// block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }: 8 sub-blocks of 32 with 6-bit (sc, m);
// w = d sc q - dmin m = (d sc) (q - dmin m / (d sc)): a float zero point per sub-block.
function unpackQ4K(data: Uint8Array, elements: number): UnpackedQuant | null {
  const blocks = elements / 256;
  const codes = new Uint8Array(elements);
  const scales = new Float32Array(blocks * 8);
  const zeroPoints = new Float32Array(blocks * 8);
  for (let b = 0; b < blocks; b++) {
    const at = b * 144;
    const d = readF16(data, at);
    const dmin = readF16(data, at + 2);
    for (let j = 0; j < 8; j++) {
      const [sc, m] = scaleMinK4(data, at + 4, j);
      const scale = d * sc;
      const offset = dmin * m;
      if (scale === 0 && offset !== 0) return null;
      scales[b * 8 + j] = scale;
      zeroPoints[b * 8 + j] = scale === 0 ? 0 : offset / scale;
    }
    for (let pair = 0; pair < 4; pair++) {
      for (let l = 0; l < 32; l++) {
        const byte = data[at + 16 + pair * 32 + l];
        codes[b * 256 + pair * 64 + l] = byte & 15;
        codes[b * 256 + pair * 64 + 32 + l] = byte >> 4;
      }
    }
  }
  return { bits: 4, blockSize: 32, codes, scales, zeroPoints };
}

// block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }: 16 sub-blocks of 16, 6-bit codes;
// w = d scales[e/16] (q - 32): 8-bit codes, block 16, uint8 zero point 32.
function unpackQ6K(data: Uint8Array, elements: number): UnpackedQuant {
  const blocks = elements / 256;
  const codes = new Uint8Array(elements);
  const scales = new Float32Array(blocks * 16);
  for (let b = 0; b < blocks; b++) {
    const at = b * 210;
    const d = readF16(data, at + 208);
    for (let s = 0; s < 16; s++) scales[b * 16 + s] = d * ((data[at + 192 + s] << 24) >> 24);
    for (let half = 0; half < 2; half++) {
      const ql = at + half * 64;
      const qh = at + 128 + half * 32;
      const y = b * 256 + half * 128;
      for (let l = 0; l < 32; l++) {
        const h = data[qh + l];
        codes[y + l] = (data[ql + l] & 15) | ((h & 3) << 4);
        codes[y + l + 32] = (data[ql + l + 32] & 15) | (((h >> 2) & 3) << 4);
        codes[y + l + 64] = (data[ql + l] >> 4) | (((h >> 4) & 3) << 4);
        codes[y + l + 96] = (data[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4);
      }
    }
  }
  return { bits: 8, blockSize: 16, codes, scales, zeroPoints: new Uint8Array(blocks * 16).fill(32) };
}
