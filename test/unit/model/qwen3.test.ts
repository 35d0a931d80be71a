/** @jest-environment ./test/helpers/ort-environment.js */
// Qwen3 dense: config.json and GGUF mapping (head_dim from the config, q/k norms, no QKV bias,
// tied or untied head), the HF directory against the float64 reference forward (segmented, in-graph
// and as an embedder), its GGUF conversion against the directory (same logits), and Q8_0 on native-q8.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig } from '../../../bench/random-llama';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import { createPoolingRunner } from '../../../src/model/runner/pooling-runner';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { DecoderArchConfig, LoadedModel } from '../../../src/model/types';
import { loadOptions } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { cosine, referencePool } from '../../helpers/encoder-model';
import { referenceForward, referenceHiddenStates } from '../../helpers/reference-forward';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON, runChunked } from '../../helpers/runner-driver';
import { convertToGguf, hfConfigJson, STORIES, writeDecoderHfDir } from '../../helpers/write-decoder-files';

// head_dim 32 with hidden 64 and 4 heads: not hidden / heads, as in Qwen3 (0.6B: 1024 / 16 heads, head_dim 128).
const CONFIG = llamaConfig({ architecture: 'qwen3', qkNorm: true, hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 32, vocabSize: 512, rmsNormEps: 1e-6, ropeTheta: 1e6, maxPositionEmbeddings: 4096, tieWordEmbeddings: false });
const q8It = nativeKernels()?.q8Available ? it : it.skip;
const PROMPT = [1, 77, 301, 12, 45, 9, 260, 33, 18, 400, 5];

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-qwen3-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function logitsOf(model: LoadedModel, backend: string, nativeQ8Gemm = false): Promise<Float32Array[]> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', intraOpThreads: 1, nativeQ8Gemm });
  try {
    expect((runner as SegmentedRunner).backendName).toBe(backend);
    return await runChunked(runner, PROMPT, 4, new BlockAllocator(runner).table(PROMPT.length));
  } finally {
    await runner.dispose();
  }
}

function worstRelative(got: Float32Array[], want: Float32Array[]): number {
  return Math.max(...got.map((row, t) => maxAbsDiff(row, want[t]) / Math.max(...want[t].map(Math.abs))));
}

needs(STORIES, NATIVE_ADDON).describe('qwen3 from an HF directory and its GGUF conversion', () => {
  let hf: LoadedModel;
  let hfLogits: Float32Array[];
  beforeAll(async () => {
    // Qwen3's own config keys: no attention bias, the window off, max_window_layers.
    await writeDecoderHfDir(join(dir, 'hf'), CONFIG, hfConfigJson(CONFIG, { use_sliding_window: false, sliding_window: null, max_window_layers: 28 }), 21);
    hf = await loadModel(loadOptions(join(dir, 'hf')));
    hfLogits = await logitsOf(hf, 'onnx-segments');
  });

  it('reads config.json: head_dim, q/k norms, untied head, no bias, no window', () => {
    const c = hf.config as DecoderArchConfig;
    expect(c).toMatchObject({ architecture: 'qwen3', headDim: 32, qkNorm: true, tieWordEmbeddings: false, attentionBias: false, ropeTheta: 1e6 });
    expect(c.slidingWindow).toBeUndefined();
    expect(hf.weights!.has('model.layers.1.self_attn.k_norm.weight')).toBe(true);
  });

  it('matches the float64 reference forward', () => {
    expect(worstRelative(hfLogits, referenceForward(hf.config, hf.weights!, PROMPT))).toBeLessThan(1e-4);
  });

  it('the GGUF conversion (general.architecture qwen3, attn_q_norm / attn_k_norm) gives the same logits', async () => {
    const path = join(dir, 'qwen3-f32.gguf');
    await convertToGguf(hf, path);
    const gguf = await loadModel(loadOptions(path));
    expect(gguf.config).toMatchObject({ architecture: 'qwen3', headDim: 32, qkNorm: true, tieWordEmbeddings: false, attentionBias: false });
    expect(worstRelative(await logitsOf(gguf, 'onnx-segments'), hfLogits)).toBeLessThan(1e-5);
  });

  q8It('Q8_0 GGUF runs on native-q8 within int8 noise of the directory', async () => {
    const path = join(dir, 'qwen3-q8.gguf');
    await convertToGguf(hf, path, 'q8_0');
    expect(worstRelative(await logitsOf(await loadModel(loadOptions(path)), 'native-q8', true), hfLogits)).toBeLessThan(3e-2);
  });

  it('the in-graph decoder (--attention graph) runs the q/k norms too', async () => {
    const runner = await createRunner(hf, { blockSize: 4, numBlocks: 16, device: 'cpu', intraOpThreads: 1, attention: 'graph' });
    try {
      expect(worstRelative(await runChunked(runner, PROMPT, 4, new BlockAllocator(runner).table(PROMPT.length)), hfLogits)).toBeLessThan(1e-4);
    } finally {
      await runner.dispose();
    }
  });

  it('served as an embedder (Qwen3-Embedding style, LAST pooling): the last final hidden state of the reference', async () => {
    const model = await loadModel({ ...loadOptions(join(dir, 'hf')), serving: { runner: 'pooling', convert: 'embed', poolerConfig: null } });
    const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1 });
    try {
      const [vector] = await runner.encode([{ tokens: PROMPT }]);
      expect(cosine(vector, referencePool(referenceHiddenStates(model.config, model.weights!, PROMPT), 'LAST'))).toBeGreaterThan(1 - 1e-5);
    } finally {
      await runner.dispose();
    }
  });

  it('a tied checkpoint (no lm_head) reads the embedding as its head', async () => {
    const tied = { ...CONFIG, tieWordEmbeddings: true };
    await writeDecoderHfDir(join(dir, 'tied'), tied, hfConfigJson(tied), 22);
    const model = await loadModel(loadOptions(join(dir, 'tied')));
    expect(model.config).toMatchObject({ tieWordEmbeddings: true });
    expect(worstRelative(await logitsOf(model, 'onnx-segments'), referenceForward(model.config, model.weights!, PROMPT))).toBeLessThan(1e-4);
  });
});
