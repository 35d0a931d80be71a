/** @jest-environment ./test/helpers/ort-environment.js */
// Sliding-window attention read from config.json as Mistral, Ministral and Qwen2 ship it, with a
// window shorter than the prompt, against the float64 reference forward (which drops the keys
// outside each layer's window); and a Mistral GGUF conversion, which like llama.cpp's carries no
// window, equal to the directory inside the window.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig } from '../../../bench/random-llama';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { DecoderArchConfig, LoadedModel } from '../../../src/model/types';
import { loadOptions } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceForward } from '../../helpers/reference-forward';
import { BlockAllocator, maxAbsDiff, NATIVE_ADDON, runChunked } from '../../helpers/runner-driver';
import { convertToGguf, hfConfigJson, STORIES, writeDecoderHfDir } from '../../helpers/write-decoder-files';

const SHAPE = { hiddenSize: 64, intermediateSize: 96, numLayers: 3, numHeads: 4, numKvHeads: 2, vocabSize: 512, rmsNormEps: 1e-5, tieWordEmbeddings: false, maxPositionEmbeddings: 4096 };
const PROMPT = [1, 77, 301, 12, 45, 9, 260, 33, 18, 400, 5, 88, 140, 7];
const WINDOW = 5;

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-window-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function logitsOf(model: LoadedModel, tokens = PROMPT): Promise<{ logits: Float32Array[]; backend: string }> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', intraOpThreads: 1, nativeQ8Gemm: false, smallDecoder: false });
  try {
    return { logits: await runChunked(runner, tokens, 3, new BlockAllocator(runner).table(tokens.length)), backend: (runner as SegmentedRunner).backendName };
  } finally {
    await runner.dispose();
  }
}

function worstRelative(got: Float32Array[], want: Float32Array[]): number {
  return Math.max(...got.map((row, t) => maxAbsDiff(row, want[t]) / Math.max(...want[t].map(Math.abs))));
}

const FAMILIES: Array<{ name: string; config: DecoderArchConfig; json: Record<string, unknown>; windowed: DecoderArchConfig['layerTypes'] | 'all' }> = [
  { name: 'mistral (every layer)', config: llamaConfig(SHAPE), json: { sliding_window: WINDOW }, windowed: 'all' },
  {
    name: 'ministral (layer_types)',
    config: llamaConfig(SHAPE),
    json: { architectures: ['MinistralForCausalLM'], model_type: 'ministral', sliding_window: WINDOW, layer_types: ['sliding_attention', 'full_attention', 'sliding_attention'] },
    windowed: ['sliding_attention', 'full_attention', 'sliding_attention'],
  },
  {
    name: 'qwen2 (use_sliding_window, from max_window_layers on)',
    config: llamaConfig({ ...SHAPE, architecture: 'qwen2', attentionBias: true }),
    json: { use_sliding_window: true, sliding_window: WINDOW, max_window_layers: 1 },
    windowed: ['full_attention', 'sliding_attention', 'sliding_attention'],
  },
];

needs(STORIES, NATIVE_ADDON).describe('sliding window from config.json, shorter than the prompt', () => {
  it.each(FAMILIES)('$name matches the windowed float64 reference', async ({ name, config, json, windowed }) => {
    const path = join(dir, name.split(' ')[0]);
    await writeDecoderHfDir(path, config, hfConfigJson(config, json), 41);
    const model = await loadModel(loadOptions(path));
    const c = model.config as DecoderArchConfig;
    expect(c.slidingWindow).toBe(WINDOW);
    expect(c.layerTypes).toEqual(windowed === 'all' ? undefined : windowed);
    const { logits, backend } = await logitsOf(model);
    expect(backend).toBe('onnx-segments');
    expect(worstRelative(logits, referenceForward(c, model.weights!, PROMPT))).toBeLessThan(1e-4);
  });

  it("a Mistral GGUF conversion has no window (as llama.cpp's) and equals the directory within it", async () => {
    const config = llamaConfig(SHAPE);
    const path = join(dir, 'mistral-gguf');
    await writeDecoderHfDir(path, config, hfConfigJson(config, { sliding_window: WINDOW }), 42);
    const hf = await loadModel(loadOptions(path));
    await convertToGguf(hf, join(dir, 'mistral.gguf'));
    const gguf = await loadModel(loadOptions(join(dir, 'mistral.gguf')));
    expect((gguf.config as DecoderArchConfig).slidingWindow).toBeUndefined();
    const inside = PROMPT.slice(0, WINDOW);
    expect(worstRelative((await logitsOf(gguf, inside)).logits, (await logitsOf(hf, inside)).logits)).toBeLessThan(1e-5);
  });

  it('--disable-sliding-window: full attention on every layer, the context capped at the window (vLLM)', async () => {
    const { config, json } = FAMILIES[1];
    const path = join(dir, 'ministral-off');
    await writeDecoderHfDir(path, config, hfConfigJson(config, json), 43);
    const model = await loadModel({ ...loadOptions(path), disableSlidingWindow: true });
    const c = model.config as DecoderArchConfig;
    expect([c.slidingWindow, c.layerTypes, model.contextLength]).toEqual([undefined, undefined, WINDOW]);
    const { logits } = await logitsOf(model);
    // The full-attention reference, which the windowed run (above) is not.
    expect(worstRelative(logits, referenceForward(c, model.weights!, PROMPT))).toBeLessThan(1e-4);
    // A model without a window is served as without the flag.
    const untouched = await loadModel({ ...loadOptions(STORIES), disableSlidingWindow: true });
    expect(untouched.contextLength).toBe((await loadModel(loadOptions(STORIES))).contextLength);
  });
});
