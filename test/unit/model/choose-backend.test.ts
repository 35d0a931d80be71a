// The chooser's rules, one by one, and the reasons it gives (logged at start-up).
import { llamaConfig, quantizedQ8, randomModel } from '../../../bench/random-llama';
import { chooseDecoderBackend, chooseRunner, SMALL_DECODER_MAX_HIDDEN, type BackendOptions } from '../../../src/model/runner/backends/choose-backend';
import type { F32Addon, F32Simd } from '../../../src/model/runner/backends/native-f32';
import { nativeKernels, type NativeKernels } from '../../../src/model/runner/native-kernels';
import { createSegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { DecoderArchConfig } from '../../../src/model/types';

const native = nativeKernels();
const describeNative = native ? describe : describe.skip;

/** The addon with the CPU's Q8_0 GEMM present or not: the rule reads only q8Available. */
function withQ8(available: boolean): NativeKernels {
  return Object.create(native, { q8Available: { value: available } }) as NativeKernels;
}

/** An ortllm_f32 whose best kernels are `simd`: the rule reads only that. */
const f32At = (simd: F32Simd) => ({ simd }) as F32Addon;

const small = (overrides: Partial<DecoderArchConfig> = {}) => randomModel(llamaConfig({ numLayers: 1, vocabSize: 64, tieWordEmbeddings: false, ...overrides }));
const q8 = (overrides: Partial<DecoderArchConfig> = {}) => quantizedQ8(small({ intermediateSize: 96, ...overrides }));
const cpu: BackendOptions = { device: 'cpu' };

describeNative('chooseDecoderBackend', () => {
  it('native-q8 where every linear is Q8_0 and the CPU runs the GEMM', () => {
    const choice = chooseDecoderBackend(q8(), cpu, withQ8(true), f32At('avx512'));
    expect(choice.name).toBe('native-q8');
    expect(choice.reason).toMatch(/all linears Q8_0/);
  });

  it.each<[string, Partial<BackendOptions>, NativeKernels | null, RegExp]>([
    ['turned off', { nativeQ8Gemm: false }, null, /not native-q8: turned off/],
    ['a CPU without the instructions', {}, withQ8(false), /not native-q8: the CPU has neither AVX512-VNNI nor AVX2/],
    ['float16 graphs', { dtype: 'float16' }, null, /not native-q8: the graphs are float16/],
    ['dequantized weights', { keepQuantized: false }, null, /not native-q8: the weights are dequantized/],
  ])('a Q8_0 model is not native-q8 with %s', (_, opts, kernels, reason) => {
    const choice = chooseDecoderBackend(q8(), { ...cpu, ...opts }, kernels ?? withQ8(true), f32At('avx512'));
    expect(choice.name).toBe('onnx-segments');
    expect(choice.reason).toMatch(reason);
  });

  it('QKV biases, widths off the 32-blocks and float32 linears keep a model off native-q8', () => {
    const reason = (m: ReturnType<typeof small>) => chooseDecoderBackend(m, cpu, withQ8(true), null).reason;
    expect(reason(q8({ architecture: 'qwen2', attentionBias: true }))).toMatch(/not native-q8: the QKV projections have biases/);
    expect(reason(small({ hiddenSize: 48, numHeads: 4, numKvHeads: 2 }))).toMatch(/not native-q8: a linear width is not a multiple of 32/);
    expect(reason(small({ intermediateSize: 96 }))).toMatch(/not native-q8: not every linear is Q8_0/);
  });

  it(`native-f32 for a float32 model up to hidden size ${SMALL_DECODER_MAX_HIDDEN} where ortllm_f32 has AVX2 or AVX-512 kernels`, () => {
    for (const simd of ['avx2', 'avx512'] as const) {
      const choice = chooseDecoderBackend(small(), cpu, withQ8(true), f32At(simd));
      expect(choice.name).toBe('native-f32');
      expect(choice.reason).toBe(`float32 weights, hidden size 64 <= ${SMALL_DECODER_MAX_HIDDEN} (${simd} kernels)`);
    }
  });

  it.each<[string, ReturnType<typeof small>, Partial<BackendOptions>, F32Addon | null, RegExp]>([
    ['turned off', small(), { smallDecoder: false }, f32At('avx512'), /not native-f32: turned off/],
    ['no ortllm_f32 build', small(), {}, null, /not native-f32: the ortllm_f32 addon is not built/],
    ['only portable loops', small(), {}, f32At('portable'), /not native-f32: the addon has only its portable loops/],
    ['a wider model', small({ hiddenSize: 2 * SMALL_DECODER_MAX_HIDDEN, numHeads: 4, numKvHeads: 2 }), {}, f32At('avx512'), /not native-f32: hidden size 256 > 128/],
    ['float16 graphs', small(), { dtype: 'float16' }, f32At('avx512'), /not native-f32: the graphs are float16/],
    ['QKV biases', small({ architecture: 'qwen2', attentionBias: true }), {}, f32At('avx512'), /not native-f32: the QKV projections have biases/],
    ['M-RoPE', small({ mropeSection: [8, 12, 12] }), {}, f32At('avx512'), /not native-f32: the model rotates by M-RoPE/],
    ['Q8_0 linears', q8(), { nativeQ8Gemm: false }, f32At('avx512'), /not native-f32: not every linear is float32/],
  ])('a small model stays in onnx-segments with %s', (_, model, opts, f32, reason) => {
    const choice = chooseDecoderBackend(model, { ...cpu, ...opts }, withQ8(true), f32);
    expect(choice.name).toBe('onnx-segments');
    expect(choice.reason).toMatch(reason);
  });

  it('CUDA runs every model in onnx-segments (the session keeps the linears on the device)', () => {
    const choice = chooseDecoderBackend(q8(), { device: 'cuda' }, withQ8(true), f32At('avx512'));
    expect(choice).toMatchObject({ name: 'onnx-segments', reason: 'cuda: the session keeps the linears on the device' });
  });

  it('the runner gets the chosen backend and logs the choice once', async () => {
    const lines: string[] = [];
    const runner = await createSegmentedRunner(small(), { blockSize: 16, numBlocks: 4, device: 'cpu', smallDecoder: false }, native!, (line) => lines.push(line));
    try {
      expect(runner.backendName).toBe('onnx-segments');
      expect(lines).toEqual([expect.stringMatching(/^\[engine\] decoder backend: onnx-segments \(not native-q8: .*; not native-f32: turned off\)$/)]);
    } finally {
      await runner.dispose();
    }
  });
});

describe('chooseRunner', () => {
  it('attention in the graph, an ONNX export and a transcription model each get their runner', () => {
    const model = small();
    expect(chooseRunner(model, 'graph')).toEqual({ kind: 'graph', float32Only: 'attention runs inside the graph' });
    expect(chooseRunner({ ...model, weights: null }, undefined).kind).toBe('export');
    expect(chooseRunner({ ...model, output: { kind: 'transcription' } }, undefined).kind).toBe('whisper');
  });

  it('a head size beyond the native kernel stays in the graph runner', () => {
    const wide = small({ hiddenSize: 512, numHeads: 1, numKvHeads: 1 });
    expect(chooseRunner(wide, undefined)).toMatchObject({ kind: 'graph', float32Only: expect.stringMatching(/no segmented graphs within the native attention kernel's limits/) });
  });

  (native ? it : it.skip)('a model within the kernel\'s limits runs segmented where the addon loads', () => {
    expect(chooseRunner(small(), undefined).kind).toBe('segmented');
  });
});
