// The two OCP 8-bit floats of vLLM's fp8 KV caches, written for the tests independently of the
// native kernel's arithmetic: decoding from the format's definition, encoding by a search of the
// format's own decoded table for the nearest finite value (ties to the even code), as vLLM's
// CUDA cache writes do (__nv_cvt_float_to_fp8 with __NV_SATFINITE): magnitudes past the largest
// finite value, infinities included, give that value; NaN gives 0x7f (a NaN in both formats).

export interface Fp8Format {
  name: 'fp8_e4m3' | 'fp8_e5m2';
  /** The native kernel's type code (KV_STORAGE's nativeCode). */
  code: number;
  decode: (byte: number) => number;
  encode: (value: number) => number;
}

/** E4M3FN: bias 7, 3 mantissa bits, no infinities, S.1111.111 is NaN, max finite 448. */
function decodeE4M3(byte: number): number {
  const e = (byte >> 3) & 0xf;
  const m = byte & 7;
  const magnitude = e === 15 && m === 7 ? NaN : e === 0 ? (m / 8) * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7);
  return byte & 0x80 ? -magnitude : magnitude;
}

/** E5M2: bias 15, 2 mantissa bits, IEEE infinities and NaNs, max finite 57344. */
function decodeE5M2(byte: number): number {
  const e = (byte >> 2) & 0x1f;
  const m = byte & 3;
  const magnitude = e === 31 ? (m === 0 ? Infinity : NaN) : e === 0 ? (m / 4) * 2 ** -14 : (1 + m / 4) * 2 ** (e - 15);
  return byte & 0x80 ? -magnitude : magnitude;
}

function encoder(decode: (byte: number) => number): (value: number) => number {
  // The finite non-negative magnitudes by code (they grow with the code: 0 .. largest finite).
  const table: number[] = [];
  for (let code = 0; code < 0x80 && Number.isFinite(decode(code)); code++) table.push(decode(code));
  const maxCode = table.length - 1;
  return (value: number) => {
    if (Number.isNaN(value)) return 0x7f;
    const sign = value < 0 || Object.is(value, -0) ? 0x80 : 0;
    const a = Math.abs(value);
    if (a >= table[maxCode]) return sign | maxCode;
    // The two finite neighbours lo <= a < hi (binary search), then the nearer, a tie to the even code.
    let lo = 0;
    let hi = maxCode;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (table[mid] <= a) lo = mid;
      else hi = mid;
    }
    const d = a - table[lo] - (table[hi] - a);
    return sign | (d < 0 || (d === 0 && (lo & 1) === 0) ? lo : hi);
  };
}

export const FP8_FORMATS: Fp8Format[] = [
  { name: 'fp8_e4m3', code: 3, decode: decodeE4M3, encode: encoder(decodeE4M3) },
  { name: 'fp8_e5m2', code: 4, decode: decodeE5M2, encode: encoder(decodeE5M2) },
];
