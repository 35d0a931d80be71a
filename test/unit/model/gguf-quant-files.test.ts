// llama.cpp-quantized copies of rand256 must dequantize to the F32 original within each format's error.
import { dequantize } from '../../../src/model/gguf/dequant';
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import type { ModelWeights, QuantFormat } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

/**
 * Max |dequantized - original| per block, relative to the block's max |w| (block = 32 values for
 * q8_0/q4_0, a 256-value super-block for the K formats). Half a quantization step, plus slack for
 * the f16 block scale:
 * - q8_0: step max/127 -> 1/254 = 0.0039; bound 0.0045.
 * - q4_0: d = max/-8; values of the other sign clamp at +7, so up to one full step: 1/8; bound 0.127.
 * - q6_k: 16-value sub-blocks, step sub_max/32 -> 1/64 = 0.0156, plus 8-bit sub-scale rounding; bound 0.018.
 * - q4_k: 32-value sub-blocks with a min, step (max-min)/15 <= 2/15 -> half-step 1/15 = 0.067, plus
 *   6-bit sub-scale and sub-min rounding; bound 0.11.
 */
const BOUNDS: Record<QuantFormat, number> = { q8_0: 0.0045, q4_0: 0.127, q6_k: 0.018, q4_k: 0.11 };

const original = sharedModel('rand256.gguf');
const files = ['rand256-Q8_0.gguf', 'rand256-Q4_0.gguf', 'rand256-Q6_K.gguf', 'rand256-Q4_K_M.gguf'];

function worstRelativeError(quantized: ModelWeights, reference: ModelWeights): Map<QuantFormat, number> {
  const worst = new Map<QuantFormat, number>();
  for (const name of quantized.names()) {
    const q = quantized.get(name);
    const r = reference.get(name);
    if (r.kind !== 'f32') throw new Error('reference must be f32');
    expect(q.shape).toEqual(r.shape);
    if (q.kind !== 'quantized') {
      expect(q.data).toEqual(r.data);
      continue;
    }
    const values = dequantize(q.format, q.data, r.data.length);
    const block = q.format.endsWith('_k') ? 256 : 32;
    let formatWorst = worst.get(q.format) ?? 0;
    for (let b = 0; b < values.length; b += block) {
      let amax = 0;
      let err = 0;
      for (let i = b; i < b + block; i++) {
        const w = r.data[i];
        amax = w > amax ? w : -w > amax ? -w : amax;
        const e = Math.abs(values[i] - w);
        if (e > err) err = e;
      }
      if (err / amax > formatWorst) formatWorst = err / amax;
    }
    worst.set(q.format, formatWorst);
  }
  return worst;
}

needs(original).describe('rand256 quantized files vs the F32 original', () => {
  let reference: ModelWeights;
  beforeAll(async () => {
    reference = (await loadGgufModel(original, { loadWeights: true })).weights!;
  });

  for (const file of files) {
    needs(sharedModel(file)).it(`${file} dequantizes within each format bound`, async () => {
      const model = await loadGgufModel(sharedModel(file), { loadWeights: true });
      const worst = worstRelativeError(model.weights!, reference);
      expect(worst.size).toBeGreaterThan(0);
      for (const [format, err] of worst) {
        expect({ format, err: err <= BOUNDS[format] }).toEqual({ format, err: true });
        // Not vacuous: quantization does lose something.
        expect(err).toBeGreaterThan(BOUNDS[format] / 10);
      }
    });
  }
});

describe('rand256-Q4_K_M.gguf', () => {
  const path = sharedModel('rand256-Q4_K_M.gguf');
  needs(path).it('mixes q4_k and q6_k tensors, as real downloads do', async () => {
    const weights = (await loadGgufModel(path, { loadWeights: true })).weights!;
    const formats = new Set(weights.names().map((n) => weights.get(n)).flatMap((t) => (t.kind === 'quantized' ? [t.format] : [])));
    expect([...formats].sort()).toEqual(['q4_k', 'q6_k']);
  });
});
