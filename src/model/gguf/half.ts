// IEEE half (f16) and bfloat16 <-> f32 conversions, shared by the GGUF and safetensors loaders.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Decodes one IEEE 754 half-precision value. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // zero / subnormal
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** The little-endian half at byte `at` (the d / dmin fields of GGML blocks). */
export const readF16 = (bytes: Uint8Array, at: number): number => f16ToF32(bytes[at] | (bytes[at + 1] << 8));

/** Encodes one value as IEEE half, rounding to nearest even (as ggml's GGML_FP32_TO_FP16 does). */
export function f32ToF16(value: number): number {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow -> inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow -> signed zero
    const m = mant | 0x800000; // subnormal half: shift the implicit bit in
    const shift = 14 - e;
    let half = m >> shift;
    const rem = m & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++; // may carry into the exponent: still correct
  return sign | half;
}

/** Decodes bfloat16 (the top 16 bits of an f32). */
export function bf16ToF32(b: number): number {
  u32[0] = b << 16;
  return f32[0];
}

/** Little-endian f16 array -> new Float32Array. */
export function f16BytesToF32(bytes: Uint8Array, count: number): Float32Array {
  const out = new Float32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) out[i] = f16ToF32(view.getUint16(2 * i, true));
  return out;
}

/** Little-endian bf16 array -> new Float32Array. */
export function bf16BytesToF32(bytes: Uint8Array, count: number): Float32Array {
  const out = new Float32Array(count);
  const outBits = new Uint32Array(out.buffer);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) outBits[i] = view.getUint16(2 * i, true) << 16;
  return out;
}

/** f32 array -> IEEE half array (graph initializers of a float16 graph). */
export function f32ArrayToF16(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = f32ToF16(values[i]);
  return out;
}
