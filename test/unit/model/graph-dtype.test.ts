/** @jest-environment ./test/helpers/ort-environment.js */
// --dtype float16: the graph stores its non-quantized weights in half precision (half the bytes)
// and still computes the reference forward pass's logits within float16's precision, for an F32
// and a Q8_0 file (quantized matmuls keep float32 activations).
import { buildDecoderGraph } from '../../../src/model/graph/decoder-graph';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import type { LoadedModel, DecoderArchConfig } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { referenceForward } from '../../helpers/reference-forward';
import { needs } from '../../helpers/needs';
import { BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';

const PROMPT = [1, 13, 200, 77, 5, 300, 301, 12, 99, 42, 6, 18];
const stories = sharedModel('stories260K.gguf');
const q8 = sharedModel('stories260K-Q8_0.gguf');
const onModels = needs(stories, q8);

const load = (path: string) =>
  loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });

const weightBytes = (model: LoadedModel, dtype: 'float32' | 'float16') =>
  buildDecoderGraph(model.config as DecoderArchConfig, model.weights!, { maxPositions: 64, blockSize: 8, keepQuantized: true, dtype }).externalData.reduce((n, f) => n + f.data.byteLength, 0);

onModels.describe('--dtype float16', () => {
  it('halves the weight bytes of an f32 model', async () => {
    const model = await load(stories);
    const f32 = weightBytes(model, 'float32');
    const f16 = weightBytes(model, 'float16');
    expect(f16 / f32).toBeGreaterThan(0.45);
    expect(f16 / f32).toBeLessThan(0.55);
  });

  it.each([['F32', () => stories], ['Q8_0', () => q8]])('matches the reference forward within float16 precision (%s)', async (_label, path) => {
    const model = await load(path());
    const runner = await createRunner(model, { blockSize: 8, numBlocks: 16, device: 'cpu', dtype: 'float16' });
    try {
      const expected = referenceForward(model.config, model.weights!, PROMPT);
      const got = await runChunked(runner, PROMPT, 5, new BlockAllocator(runner).table(PROMPT.length));
      let worst = 0;
      let scale = 0;
      got.forEach((g, i) => {
        worst = Math.max(worst, maxAbsDiff(g, expected[i]));
        scale = Math.max(scale, ...Array.from(expected[i], Math.abs));
      });
      // float16 keeps ~3 significant digits; the logits reach |10| here.
      expect(worst).toBeLessThan(0.02 * scale);
      expect(worst).toBeGreaterThan(0); // really computed in half precision
    } finally {
      await runner.dispose();
    }
  });
});
