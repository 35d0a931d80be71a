// float32Json (serving/pooling/float-json.ts, native/src/float-json.cc) writes what
// JSON.stringify(Array.from(v)) writes, byte for byte, and the embeddings route's JSON text is
// JSON.stringify of the response object: clients parse these bytes.

import { float32Json, float32JsonIsNative } from '../../../src/serving/pooling/float-json';

if (!float32JsonIsNative()) console.warn('\n*** float32Json runs on JSON.stringify here (ortllm_json.node is not built): its native writer is not compared ***\n');

/** A seeded xorshift32: reproducible bit patterns. */
function bits(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
}

describe(`float32Json (${float32JsonIsNative() ? 'native writer' : 'JSON.stringify fallback'})`, () => {
  it('equals JSON.stringify over 2M random float32 bit patterns (every exponent, denormals, NaNs and infinities included)', () => {
    const next = bits(12345);
    const u = new Uint32Array(4096);
    const f = new Float32Array(u.buffer);
    for (let round = 0; round < 512; round++) {
      for (let i = 0; i < u.length; i++) u[i] = next();
      const got = float32Json(f);
      const want = JSON.stringify(Array.from(f));
      if (got !== want) expect(got.split(',')).toEqual(want.split(','));
    }
  });

  it('equals JSON.stringify on the edges: zeros, -0, the extremes, exponent-form thresholds, denormals, embedding-sized values', () => {
    const edges = [0, -0, 1, -1, 0.1, 0.5, 1e-6, 1e-7, 9.999999e-7, 1e20, 1e21, 1.5e21, 123456789, 2 ** 24 + 2, 2 ** 70, 2 ** -20, 2 ** -126, 2 ** -149, -(2 ** -149), 3.4028234663852886e38, -3.4028234663852886e38, 1.1754942e-38, NaN, Infinity, -Infinity];
    const next = bits(7);
    const normalised = Array.from({ length: 384 }, () => ((next() / 2 ** 32 - 0.5) * 0.2));
    for (const values of [edges, normalised, [], [42]]) {
      const v = Float32Array.from(values);
      expect(float32Json(v)).toBe(JSON.stringify(Array.from(v)));
    }
  });

  it('refuses anything but a Float32Array', () => {
    if (!float32JsonIsNative()) return expect(float32Json(new Float32Array(0))).toBe('[]');
    expect(() => float32Json(new Float64Array(2) as unknown as Float32Array)).toThrow(/Float32Array/);
  });
});
