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
