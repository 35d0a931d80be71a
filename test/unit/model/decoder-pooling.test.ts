/** @jest-environment ./test/helpers/ort-environment.js */
// Decoders served as embedders (--convert embed): the llama graph without its LM head, causal
// attention over each padded sequence, LAST or MEAN pooling, against the reference forward.
import { loadModel } from '../../../src/model/load-model';
import { createPoolingRunner } from '../../../src/model/runner/pooling-runner';
import type { LoadModelOptions } from '../../../src/model/types';
import { cosine, referencePool } from '../../helpers/encoder-model';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceHiddenStates } from '../../helpers/reference-forward';

const stories = sharedModel('stories260K.gguf');
const PROMPTS = [[1, 403, 105, 263], [1, 90, 250, 263, 93, 298, 72, 471], [1, 365]];

async function pooled(opts: LoadModelOptions, prompts: number[][]) {
  const model = await loadModel(opts);
  const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1 });
  try {
    return { model, vectors: await runner.encode(prompts.map((tokens) => ({ tokens }))) };
  } finally {
    await runner.dispose();
  }
}

needs(stories).describe('stories260K --convert embed', () => {
  it('LAST pooling (the default for decoders) gives the last position\'s final hidden state, whatever the padding', async () => {
    const { model, vectors } = await pooled({ ...loadOptions(stories), serving: { runner: 'auto', convert: 'embed', poolerConfig: null } }, PROMPTS);
    expect(model.output).toEqual({ kind: 'pooled', pooling: 'LAST' });
    expect(model.weights!.has('lm_head.weight')).toBe(false);
    PROMPTS.forEach((p, i) => {
      expect(vectors[i].length).toBe(model.config.hiddenSize);
      expect(cosine(vectors[i], referencePool(referenceHiddenStates(model.config, model.weights!, p), 'LAST'))).toBeGreaterThan(1 - 1e-4);
    });
  });

  it('MEAN pooling from --pooler-config', async () => {
    const opts = { ...loadOptions(stories), serving: { runner: 'pooling' as const, convert: 'auto' as const, poolerConfig: { pooling_type: 'mean' } } };
    const { model, vectors } = await pooled(opts, PROMPTS);
    expect(model.output).toEqual({ kind: 'pooled', pooling: 'MEAN' });
    PROMPTS.forEach((p, i) => {
      expect(cosine(vectors[i], referencePool(referenceHiddenStates(model.config, model.weights!, p), 'MEAN'))).toBeGreaterThan(1 - 1e-4);
    });
  });
});
