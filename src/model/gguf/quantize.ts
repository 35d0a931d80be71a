// Encoders used by the GGUF writer, following ggml's reference quantize_row_*_ref.
import { f32ToF16 } from './half';

/** C roundf: halves away from zero (Math.round rounds them up). */
const roundAway = (x: number): number => (x >= 0 ? Math.floor(x + 0.5) : -Math.floor(0.5 - x));

/** Q8_0 blocks of `values` (length a multiple of 32): d = max|x| / 127, q = round(x / d). */
export function quantizeQ8_0(values: Float32Array): Uint8Array {
  if (values.length % 32 !== 0) throw new Error(`Q8_0: ${values.length} values is not a multiple of 32`);
  const out = new Uint8Array((values.length / 32) * 34);
  for (let b = 0, at = 0; b < values.length; b += 32, at += 34) {
    let amax = 0;
    for (let i = 0; i < 32; i++) {
      const v = values[b + i];
      if (v > amax) amax = v;
      else if (-v > amax) amax = -v;
    }
    const d = amax / 127;
    const id = d ? 1 / d : 0;
    const h = f32ToF16(d);
    out[at] = h & 0xff;
    out[at + 1] = h >> 8;
    for (let i = 0; i < 32; i++) out[at + 2 + i] = roundAway(values[b + i] * id) & 0xff;
  }
  return out;
}

/** ggml's kvalues_mxfp4 (E2M1 doubled), the codes an MXFP4 block holds. */
const MXFP4_CODES = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/**
 * MXFP4 blocks of `values` (length a multiple of 32), as ggml's quantize_row_mxfp4_ref: e =
 * floor(log2(max|x|)) - 2 + 127 (0 for an all-zero block), d = 2^(e - 128), each value the code
 * nearest x / d (the first on ties); element j in byte j's low nibble, j + 16 in its high one.
 */
export function quantizeMxfp4(values: Float32Array): Uint8Array {
  if (values.length % 32 !== 0) throw new Error(`MXFP4: ${values.length} values is not a multiple of 32`);
  const out = new Uint8Array((values.length / 32) * 17);
  const nearest = (x: number, d: number): number => {
    let best = 0;
    for (let i = 1; i < 16; i++) if (Math.abs(MXFP4_CODES[i] * d - x) < Math.abs(MXFP4_CODES[best] * d - x)) best = i;
    return best;
  };
  for (let b = 0, at = 0; b < values.length; b += 32, at += 17) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(values[b + i]));
    const e = amax > 0 ? Math.min(254, Math.max(0, Math.floor(Math.log2(amax)) - 2 + 127)) : 0;
    const d = Math.fround(2 ** (e - 128));
    out[at] = e;
    for (let j = 0; j < 16; j++) out[at + 1 + j] = nearest(values[b + j], d) | (nearest(values[b + 16 + j], d) << 4);
  }
  return out;
}

/** Little-endian IEEE half encoding of `values`. */
export function encodeF16(values: Float32Array): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  for (let i = 0; i < values.length; i++) {
    const h = f32ToF16(values[i]);
    out[2 * i] = h & 0xff;
    out[2 * i + 1] = h >> 8;
  }
  return out;
}

/** Little-endian bfloat16 encoding of `values`, rounding to nearest even (as ggml and torch do). */
export function encodeBF16(values: Float32Array): Uint8Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const b = bits[i];
    out[i] = (b & 0x7fffffff) > 0x7f800000 ? (b >>> 16) | 0x40 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16; // keep NaN a NaN
  }
  return new Uint8Array(out.buffer);
}
