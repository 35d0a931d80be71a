/** @jest-environment ./test/helpers/ort-environment.js */
// MoE decoders (mixtral-style: every layer routed; qwen3moe-style: dense layers among them, no
// renormalisation) on seeded random weights against the float64 reference, on every path that
// runs them: onnx-segments (the native attention between graphs) and the in-graph runner.
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import type { DecoderArchConfig } from '../../../src/model/types';
import { referenceMoeForward, type Routing } from '../../helpers/reference-moe';
import { ATTENTION_PATHS, BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';

const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301];

export const MIXTRAL_TINY: Partial<DecoderArchConfig> = { numExperts: 4, numExpertsPerToken: 2, expertIntermediateSize: 32, normTopKProb: true };
const VARIANTS: Array<[string, Partial<DecoderArchConfig>]> = [
  ['mixtral-style: 4 experts, top-2, renormalised', MIXTRAL_TINY],
  ['qwen3moe-style: 8 experts, top-3, not renormalised, layer 1 dense', { numLayers: 3, numExperts: 8, numExpertsPerToken: 3, expertIntermediateSize: 16, normTopKProb: false, denseLayers: [1] }],
];

describe.each(VARIANTS)('MoE forward vs reference: %s', (_name, overrides) => {
  const config = llamaConfig(overrides);
  const model = randomModel(config, 11);
  const seen: Routing[][] = [];
  const expected = referenceMoeForward(config, model.weights!, PROMPT, seen);

  it('routes different tokens to different experts (the test would see a wrong routing)', () => {
    for (const routings of seen.filter(Boolean)) {
      const sets = new Set(routings.map((r) => [...r.experts].sort().join(',')));
      expect(sets.size).toBeGreaterThan(1);
      const used = new Set(routings.flatMap((r) => r.experts));
      expect(used.size).toBe(config.numExperts);
    }
  });

  for (const path of ATTENTION_PATHS) {
    path.gate.it(`${path.name}: logits at every position within 1e-3 of the reference`, async () => {
      const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', attention: path.attention });
      try {
        const got = await runChunked(runner, PROMPT, 5, new BlockAllocator(runner).table(PROMPT.length));
        expect(Math.max(...got.map((g, i) => maxAbsDiff(g, expected[i])))).toBeLessThan(1e-3);
      } finally {
        await runner.dispose();
      }
    });
  }
});
