/** @jest-environment ./test/helpers/ort-environment.js */
// The built decoder graph against the independent reference forward pass, on random weights
// covering the config variants (head sizes, GQA, qwen2 biases, untied head, rope scaling).
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import { DecoderArchConfig } from '../../../src/model/types';
import { referenceForward } from '../../helpers/reference-forward';
import { BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';

const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301];

const variants: Array<[string, Partial<DecoderArchConfig>]> = [
  ['llama, head size 8, GQA 8/4, tied', {}],
  ['llama, head size 64, GQA 4/2, untied', { hiddenSize: 256, intermediateSize: 768, numHeads: 4, numKvHeads: 2, tieWordEmbeddings: false }],
  ['qwen2 with q/k/v biases, MHA', { architecture: 'qwen2', attentionBias: true, numKvHeads: 8, ropeTheta: 1e6 }],
  ['llama3 rope scaling', {
    hiddenSize: 128, numHeads: 4, numKvHeads: 1, ropeTheta: 500000,
    ropeScaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 16 },
  }],
  ['linear rope scaling, 3 layers', { numLayers: 3, ropeScaling: { type: 'linear', factor: 4 } }],
  ['yarn rope scaling, head size 32', { hiddenSize: 128, numHeads: 4, numKvHeads: 2, ropeScaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 64 } }],
  ['explicit per-frequency divisors (GGUF rope_freqs)', { ropeScaling: { rope_type: 'freq_factors', freq_factors: [1, 2.5, 4, 8] } }],
];

describe.each(variants)('graph vs reference: %s', (_name, overrides) => {
  it('matches the reference logits at every prompt position (max abs diff < 1e-3)', async () => {
    const config = llamaConfig(overrides);
    const model = randomModel(config, 7);
    const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu' });
    try {
      const expected = referenceForward(config, model.weights!, PROMPT);
      const got = await runChunked(runner, PROMPT, PROMPT.length, new BlockAllocator(runner).table(PROMPT.length));
      const diffs = got.map((g, i) => maxAbsDiff(g, expected[i]));
      expect(Math.max(...diffs)).toBeLessThan(1e-3);
    } finally {
      await runner.dispose();
    }
  });
});
