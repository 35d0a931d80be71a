/** @jest-environment ./test/helpers/ort-environment.js */
// The per-layer decoder options (q/k norm, attention scale, per-layer RoPE, sliding window) on
// every backend the segmented runner has for them, against the float64 reference forward
// (test/helpers/reference-forward.ts), and what the chooser and the in-graph runner refuse.
import { llamaConfig, quantizedQ8, randomModel } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import { chooseDecoderBackend, smallDecoderMaxHidden } from '../../../src/model/runner/backends/choose-backend';
import { f32Addon } from '../../../src/model/runner/backends/native-f32';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { DecoderArchConfig, LoadedModel } from '../../../src/model/types';
import { referenceForward } from '../../helpers/reference-forward';
import { needs } from '../../helpers/needs';
import { BlockAllocator, NATIVE_ADDON, runChunked } from '../../helpers/runner-driver';

const native = nativeKernels();
const nativeGate = needs(NATIVE_ADDON);
const q8 = native?.q8Available ? describe : describe.skip;

/** True when the addon's attention takes the window / soft-cap / sinks arguments. */
function attentionTakesWindow(): boolean {
  if (!native) return false;
  try {
    const dims = Int32Array.from([1, 1, 8, 16, 0]);
    native.attention(new Float32Array(8), new Float32Array(8), new Float32Array(128), new Float32Array(128), Int32Array.from([0, 1, 0, 0]), Int32Array.from([0]), dims, 1, 4, 0, null);
    return true;
  } catch {
    return false;
  }
}
const windowed = attentionTakesWindow();
if (native && !windowed) console.warn('\n*** SKIPPING the sliding-window runner tests: this build of the attention addon takes no window ***\n');
const windowDescribe = windowed ? describe : describe.skip;

const SHAPE: Partial<DecoderArchConfig> = { hiddenSize: 64, intermediateSize: 96, numLayers: 3, numHeads: 4, numKvHeads: 2, headDim: 32, vocabSize: 96, tieWordEmbeddings: false };
const PROMPT = [3, 17, 42, 8, 91, 5, 60, 23, 77, 14, 31, 2, 55];

/** The relative worst difference of the runner's logits (prompt in chunks of 4) from the reference. */
async function relativeError(model: LoadedModel, opts: { nativeQ8Gemm?: boolean; smallDecoder?: boolean; backend: string }): Promise<number> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', intraOpThreads: 1, nativeQ8Gemm: opts.nativeQ8Gemm ?? false, smallDecoder: opts.smallDecoder ?? false });
  try {
    expect((runner as SegmentedRunner).backendName).toBe(opts.backend);
    const got = await runChunked(runner, PROMPT, 4, new BlockAllocator(runner).table(PROMPT.length));
    const want = referenceForward(model.config, model.weights!, PROMPT);
    let worst = 0;
    got.forEach((row, t) => {
      const scale = Math.max(...want[t].map(Math.abs));
      row.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - want[t][i]) / scale)));
    });
    return worst;
  } finally {
    await runner.dispose();
  }
}

const QK_NORM: Partial<DecoderArchConfig> = { ...SHAPE, qkNorm: true, attentionScale: 0.11, layerRope: [null, { ropeTheta: 500, ropeScaling: null }, null] };

nativeGate.describe('q/k norms, attention scale and per-layer RoPE', () => {
  const model = randomModel(llamaConfig(QK_NORM), 11);

  it('onnx-segments matches the float64 reference', async () => {
    expect(await relativeError(model, { backend: 'onnx-segments' })).toBeLessThan(1e-4);
  });

  it('the reference itself depends on each option (the test would see one dropped)', () => {
    const base = referenceForward(model.config, model.weights!, PROMPT.slice(0, 5))[4];
    for (const drop of [{ qkNorm: false }, { attentionScale: undefined }, { layerRope: undefined }]) {
      const other = referenceForward({ ...model.config, ...drop }, model.weights!, PROMPT.slice(0, 5))[4];
      expect(Math.max(...base.map((v, i) => Math.abs(v - other[i])))).toBeGreaterThan(1e-3);
    }
  });

  it('native-f32 refuses them, naming why; onnx-segments takes the model', () => {
    const f32 = f32Addon();
    const choice = chooseDecoderBackend(model, { device: 'cpu', nativeQ8Gemm: false }, native!, f32);
    expect(choice.name).toBe('onnx-segments');
    if (f32) expect(choice.reason).toMatch(/not native-f32: the model has q\/k norms/);
  });

  it('the in-graph runner refuses the scale and per-layer RoPE at start-up, naming each', async () => {
    await expect(createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', attention: 'graph' })).rejects.toThrow(
      /lacks an attention scale other than 1\/sqrt\(head_dim\), per-layer RoPE settings; serve it with the native attention addon/,
    );
  });
});

q8('q/k norms on native-q8', () => {
  it('all-Q8_0 linears run in the addon within int8 noise of the reference', async () => {
    const model = quantizedQ8(randomModel(llamaConfig(QK_NORM), 12));
    expect(await relativeError(model, { backend: 'native-q8', nativeQ8Gemm: true })).toBeLessThan(3e-2);
  });
});

// Layer 1 attends over everything; layers 0 and 2 over the last 5 positions.
const WINDOWED = randomModel(llamaConfig({ ...SHAPE, slidingWindow: 5, layerTypes: ['sliding_attention', 'full_attention', 'sliding_attention'] }), 13);

it('the in-graph runner refuses a window shorter than the context, and takes one as long', async () => {
  await expect(createRunner(WINDOWED, { blockSize: 4, numBlocks: 16, device: 'cpu', attention: 'graph' })).rejects.toThrow(/a sliding window \(5 positions/);
  const short = { ...WINDOWED, config: { ...WINDOWED.config, maxPositionEmbeddings: 5 }, contextLength: 5 };
  const runner = await createRunner(short, { blockSize: 4, numBlocks: 16, device: 'cpu', attention: 'graph' });
  await runner.dispose();
});

windowDescribe('sliding window shorter than the prompt', () => {
  const model = WINDOWED;

  it('onnx-segments matches the windowed reference', async () => {
    expect(await relativeError(model, { backend: 'onnx-segments' })).toBeLessThan(1e-4);
  });

  it('the reference with full attention differs by far more than the tolerances above (the window matters here)', () => {
    const full = referenceForward({ ...model.config, slidingWindow: undefined } as DecoderArchConfig, model.weights!, PROMPT).at(-1)!;
    const windowedRef = referenceForward(model.config, model.weights!, PROMPT).at(-1)!;
    const scale = Math.max(...windowedRef.map(Math.abs));
    expect(Math.max(...full.map((v, i) => Math.abs(v - windowedRef[i]))) / scale).toBeGreaterThan(0.1);
  });

  (smallDecoderMaxHidden(f32Addon()) > 0 ? it : it.skip)('native-f32 matches the windowed reference', async () => {
    expect(await relativeError(model, { backend: 'native-f32', smallDecoder: true })).toBeLessThan(1e-4);
  });

  q8('native-q8', () => {
    it('matches the windowed reference within int8 noise', async () => {
      expect(await relativeError(quantizedQ8(model), { backend: 'native-q8', nativeQ8Gemm: true })).toBeLessThan(3e-2);
    });
  });

});
