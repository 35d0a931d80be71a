// GGML blocks -> MatMulNBits codes/scales/zero points: scale * (code - zeroPoint) must reproduce
// the loader's dequantizer for every quantized tensor of the fixture files.
import { dequantize } from '../../../src/model/gguf/dequant';
import { unpackGgml } from '../../../src/model/graph/ggml-unpack';
import { loadModel } from '../../../src/model/load-model';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

describe.each(['rand256-Q8_0.gguf', 'rand256-Q4_0.gguf', 'rand256-Q6_K.gguf', 'rand256-Q4_K_M.gguf'])('%s', (file) => {
  const path = sharedModel(file);
  needs(path).it('unpacked blocks reproduce dequantize() for two tensors of each quantized format', async () => {
    const model = await loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });
    const weights = model.weights!;
    let checked = 0;
    const perFormat = new Map<string, number>();
    for (const name of weights.names()) {
      const t = weights.get(name);
      if (t.kind !== 'quantized' || (perFormat.get(t.format) ?? 0) >= 2) continue;
      perFormat.set(t.format, (perFormat.get(t.format) ?? 0) + 1);
      const n = t.shape.reduce((a, b) => a * b, 1);
      const u = unpackGgml(t.format, t.data, n)!;
      expect(u).not.toBeNull();
      const expected = dequantize(t.format, t.data, n);
      const defaultZero = 2 ** (u.bits - 1);
      let worst = 0;
      let maxCode = 0;
      for (let i = 0; i < n; i++) {
        const b = Math.floor(i / u.blockSize);
        maxCode = Math.max(maxCode, u.codes[i]);
        const value = u.scales[b] * (u.codes[i] - (u.zeroPoints ? u.zeroPoints[b] : defaultZero));
        worst = Math.max(worst, Math.abs(value - expected[i]) / (Math.abs(u.scales[b]) + 1e-30));
      }
      expect(maxCode).toBeLessThan(2 ** u.bits);
      expect(worst).toBeLessThan(1e-4); // in units of the block's scale: float rounding only
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
  });
});
