/** @jest-environment ./test/helpers/ort-environment.js */
// MoE decoders (mixtral-style: every layer routed and renormalised; qwen3moe-style: a dense layer
// among them, no renormalisation) on seeded random weights against the float64 reference
// (test/helpers/reference-moe.ts), on every path that runs them: onnx-segments, the in-graph
// runner, and native-q8 with Q8_0 experts (within int8 noise of the dequantized reference).
import { llamaConfig, quantizedQ8, randomModel } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import { chooseDecoderBackend } from '../../../src/model/runner/backends/choose-backend';
import { f32Addon } from '../../../src/model/runner/backends/native-f32';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { DecoderArchConfig } from '../../../src/model/types';
import { referenceMoeForward, type Routing } from '../../helpers/reference-moe';
import { promptLogits, worstRelative } from '../../helpers/prompt-logits';
import { ATTENTION_PATHS, BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';

const native = nativeKernels();
const q8 = native?.q8Available ? describe : describe.skip;
const PROMPT = [1, 17, 50, 3, 90, 40, 12, 91, 0, 42, 7, 30, 31];

/** Widths that are whole Q8_0 blocks, so native-q8 takes the quantized model. */
const SHAPE: Partial<DecoderArchConfig> = { hiddenSize: 64, intermediateSize: 96, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 96, tieWordEmbeddings: false };
const VARIANTS: Array<[string, Partial<DecoderArchConfig>]> = [
  ['mixtral-style: 4 experts, top-2, renormalised', { ...SHAPE, numExperts: 4, numExpertsPerToken: 2, expertIntermediateSize: 32, normTopKProb: true }],
  ['qwen3moe-style: 8 experts, top-3, not renormalised, layer 1 dense', { ...SHAPE, numLayers: 3, numExperts: 8, numExpertsPerToken: 3, expertIntermediateSize: 32, normTopKProb: false, denseLayers: [1] }],
];

describe.each(VARIANTS)('MoE forward vs reference: %s', (_name, overrides) => {
  const config = llamaConfig(overrides);
  const model = randomModel(config, 11);
  const seen: Routing[][] = [];
  const expected = referenceMoeForward(config, model.weights!, PROMPT, seen);

  it('routes different tokens to different experts, and every expert gets some', () => {
    const moeLayers = seen.filter(Boolean);
    expect(moeLayers.length).toBe(config.numLayers - (config.denseLayers?.length ?? 0));
    for (const routings of moeLayers) {
      expect(new Set(routings.map((r) => [...r.experts].sort().join(','))).size).toBeGreaterThan(1);
      expect(new Set(routings.flatMap((r) => r.experts)).size).toBe(config.numExperts);
    }
  });

  it('the reference depends on the renormalisation (the test would see it dropped)', () => {
    const other = referenceMoeForward({ ...config, normTopKProb: !config.normTopKProb } as DecoderArchConfig, model.weights!, PROMPT);
    expect(worstRelative(other, expected)).toBeGreaterThan(1e-3);
  });

  for (const path of ATTENTION_PATHS) {
    path.gate.it(`${path.name} (float32 experts): logits at every position within 1e-3 of the reference`, async () => {
      const got = await promptLogits(model, PROMPT, { attention: path.attention, chunk: 5 });
      expect(Math.max(...got.map((g, i) => maxAbsDiff(g, expected[i])))).toBeLessThan(1e-3);
    });
  }

  q8('Q8_0 experts', () => {
    const quantized = quantizedQ8(model);
    const dequantizedReference = referenceMoeForward(config, quantized.weights!, PROMPT);

    it('native-q8 takes the model; native-f32 refuses it, naming the MoE layers', () => {
      expect(chooseDecoderBackend(quantized, { device: 'cpu', nativeQ8Gemm: true }, native!).name).toBe('native-q8');
      const f32 = chooseDecoderBackend(model, { device: 'cpu', nativeQ8Gemm: false }, native!, f32Addon());
      expect(f32.name).toBe('onnx-segments');
      if (f32Addon()) expect(f32.reason).toMatch(/not native-f32: the model has MoE layers/);
    });

    for (const [backend, nativeQ8Gemm] of [['native-q8', true], ['onnx-segments', false]] as const) {
      it(`${backend}: within int8 noise of the dequantized reference`, async () => {
        const got = await promptLogits(quantized, PROMPT, { backend, nativeQ8Gemm });
        expect(worstRelative(got, dequantizedReference)).toBeLessThan(3e-2);
      });
    }

    it('native-q8: a batch of mixed sequences (prefill and decode) gives each what it gets alone', async () => {
      const a = PROMPT.slice(0, 9);
      const b = [5, 60, 23, 77, 14];
      const runner = await createRunner(quantized, { blockSize: 4, numBlocks: 32, device: 'cpu', intraOpThreads: 1, nativeQ8Gemm: true });
      try {
        const blocks = new BlockAllocator(runner);
        const alone = async (tokens: number[]) => runChunked(runner, tokens, tokens.length, blocks.table(tokens.length));
        const wantA = await alone(a);
        const wantB = await alone(b);
        // a's first 8 tokens prefilled, then a's last token decoded in the same step as b's prefill.
        const tableA = blocks.table(a.length);
        const tableB = blocks.table(b.length);
        await runner.step([{ tokens: a.slice(0, 8), positionOffset: 0, blockTable: tableA }]);
        const step = await runner.step([
          { tokens: a.slice(8), positionOffset: 8, blockTable: tableA, allLogits: true },
          { tokens: b, positionOffset: 0, blockTable: tableB, allLogits: true },
        ]);
        const vocab = config.vocabSize;
        expect(maxAbsDiff(step.allLogits[0]!, wantA[8])).toBeLessThan(1e-4);
        b.forEach((_, i) => expect(maxAbsDiff(step.allLogits[1]!.subarray(i * vocab, (i + 1) * vocab), wantB[i])).toBeLessThan(1e-4));
      } finally {
        await runner.dispose();
      }
    });
  });
});
