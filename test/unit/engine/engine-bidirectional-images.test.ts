/** @jest-environment ./test/helpers/ort-environment.js */
// Images whose tokens attend both ways (Gemma 3) through the engine, on a seeded Gemma 3 text
// model with a test-only tower (PixelEncoder): greedy tokens equal the float64 reference with
// the image mask; a prefill chunk never cuts an image (the text before it runs first); a
// prefix-cache hit that would end inside an image backs off to the block where it starts;
// preemption recomputes the same; an image larger than max_num_batched_tokens is refused.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gemmaConfigJson, randomGemmaTensors, writeGemmaHfDir } from '../../../bench/random-gemma';
import { createInProcessEngine } from '../../../src/engine';
import type { DecodedImage, EngineClient, EngineOptions, EngineRequest } from '../../../src/engine/types';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import type { LoadedModel, StepSequence } from '../../../src/model/types';
import { preprocessImage } from '../../../src/model/vision/preprocess-image';
import { loadOptions } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { PixelEncoder, seededImage, testVisionModel, tinyGemma3Processor } from '../../helpers/pixel-encoder';
import { referenceGemmaForward } from '../../helpers/reference-gemma';
import { argmax, NATIVE_ADDON } from '../../helpers/runner-driver';
import { engineOptions, finalOutput, recording, request, storedBytesPerBlock } from './engine-fixtures';

const TOKENS_PER_IMAGE = 12;
const IMAGE_TOKEN = 5;
const PROMPT_FORMAT = { placeholderText: '<img>', placeholderTokenId: IMAGE_TOKEN, imageTokenId: IMAGE_TOKEN, prefix: [], suffix: [] };

type Json = Record<string, unknown>;

function promptWithImage(before: number, after: number): number[] {
  return [1, ...Array.from({ length: before - 1 }, (_, i) => 30 + i), ...new Array<number>(TOKENS_PER_IMAGE).fill(IMAGE_TOKEN), ...Array.from({ length: after }, (_, i) => 90 + i)];
}

function imageRequest(image: DecodedImage, hash: string, prompt: number[], at: number, maxTokens = 4): EngineRequest {
  return request(prompt, { max_tokens: maxTokens, logprobs: 0 }, { multiModal: { images: [image], processorKwargs: {}, placements: [{ offset: at, length: TOKENS_PER_IMAGE, hash }] } });
}

needs(NATIVE_ADDON).describe('bidirectional images through the engine (seeded gemma3, test tower)', () => {
  let tmp: string;
  let json: Json;
  let tensors: Map<string, Float32Array>;
  let model: LoadedModel;
  const engines: EngineClient[] = [];
  const red = seededImage(9, 7, 1);

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-bidi-engine-'));
    json = gemmaConfigJson('gemma3', { sliding_window: 8, max_position_embeddings: 512 });
    tensors = randomGemmaTensors(json, 31);
    await writeGemmaHfDir(tmp, json, tensors);
    const text = await loadModel(loadOptions(tmp, { skipTokenizer: true }));
    model = { ...text, vision: { ...testVisionModel({ encoder: new PixelEncoder(text.config.hiddenSize), tokensPerImage: TOKENS_PER_IMAGE, prompt: PROMPT_FORMAT }), bidirectionalImages: true } };
  });
  afterAll(async () => {
    for (const engine of engines) await engine.shutdown();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Every step's sequences as the runner got them (positions, rows, runs). */
  let seen: StepSequence[][] = [];

  async function start(options: Partial<EngineOptions> = {}, encoder = new PixelEncoder(model.config.hiddenSize)): Promise<EngineClient> {
    const withEncoder: LoadedModel = { ...model, vision: { ...model.vision!, createEncoder: () => Promise.resolve(encoder) } };
    const recordSteps: typeof createRunner = async (m, opts) => {
      const runner = await createRunner(m, opts);
      const step = runner.step.bind(runner);
      runner.step = (batch) => {
        seen.push(batch.map((s) => ({ ...s })));
        return step(batch);
      };
      return runner;
    };
    const engine = await createInProcessEngine(withEncoder, engineOptions({ maxModelLen: 128, maxNumBatchedTokens: 64, ...options }), { createRunner: recordSteps });
    engines.push(engine);
    return engine;
  }

  /** The image's rows (a fresh encoder of the same seed) at positions from `at`. */
  function rowsAt(at: number): Map<number, Float32Array> {
    const hidden = model.config.hiddenSize;
    const rows = new PixelEncoder(hidden).encode(preprocessImage(tinyGemma3Processor(TOKENS_PER_IMAGE), { width: red.width, height: red.height, data: red.rgb }));
    return new Map(Array.from({ length: TOKENS_PER_IMAGE }, (_, r) => [at + r, rows.subarray(r * hidden, (r + 1) * hidden)]));
  }

  /** Greedy tokens of the reference with the image's rows at `at` and its run attended both ways (or causally). */
  function referenceGreedy(prompt: number[], at: number, count: number, bidirectional = true): number[] {
    const given = rowsAt(at);
    const runs = bidirectional ? [{ offset: at, length: TOKENS_PER_IMAGE }] : [];
    const tokens = [...prompt];
    for (let i = 0; i < count; i++) {
      const logits = referenceGemmaForward(json, tensors, tokens, given, runs);
      tokens.push(argmax(Float32Array.from(logits[logits.length - 1])));
    }
    return tokens.slice(prompt.length);
  }

  /** The reference's logprob of each prompt token after the first. */
  function referencePromptLogprobs(prompt: number[], at: number, bidirectional: boolean): number[] {
    const all = referenceGemmaForward(json, tensors, prompt, rowsAt(at), bidirectional ? [{ offset: at, length: TOKENS_PER_IMAGE }] : []);
    return prompt.slice(1).map((t, i) => {
      const logits = all[i];
      const max = Math.max(...logits);
      return logits[t] - max - Math.log(logits.reduce((a, z) => a + Math.exp(z - max), 0));
    });
  }

  it("gives the reference's tokens and prompt logprobs with the image mask, which the causal mask would not", async () => {
    const prompt = promptWithImage(6, 5);
    const engine = await start();
    const req = imageRequest(red, 'red', prompt, 6, 6);
    req.params = { ...req.params, prompt_logprobs: 0 };
    const out = await finalOutput(engine, req);
    expect(out.outputs[0].tokenIds).toEqual(referenceGreedy(prompt, 6, 6));
    const got = out.promptLogprobs!.slice(1).map((p) => p!.chosen.logprob);
    const want = referencePromptLogprobs(prompt, 6, true);
    const causal = referencePromptLogprobs(prompt, 6, false);
    const worst = (a: number[], b: number[]) => Math.max(...a.map((v, i) => Math.abs(v - b[i])));
    expect(worst(got, want)).toBeLessThan(1e-3);
    expect(worst(causal, want)).toBeGreaterThan(1e-2);
  });

  it('never cuts an image between prefill chunks: the text before it runs first, then the whole image', async () => {
    const prompt = promptWithImage(20, 10);
    const whole = await start({ enablePrefixCaching: false });
    const chunked = await start({ enablePrefixCaching: false, maxNumBatchedTokens: 14 });
    const a = await finalOutput(whole, imageRequest(red, 'red', prompt, 20));
    seen = [];
    const b = await finalOutput(chunked, imageRequest(red, 'red', prompt, 20));
    // 0..13, then 14..19 (the chunk stops before the image at 20), then 20..33 with the image's run.
    expect(seen.slice(0, 3).map(([s]) => [s.positionOffset, s.tokens.length, s.bidirectionalRuns])).toEqual([
      [0, 14, undefined],
      [14, 6, undefined],
      [20, 14, [{ row: 0, count: TOKENS_PER_IMAGE }]],
    ]);
    expect(b.outputs[0].tokenIds).toEqual(a.outputs[0].tokenIds);
    expect(b.outputs[0].cumulativeLogprob!).toBeCloseTo(a.outputs[0].cumulativeLogprob!, 4);
    expect(a.outputs[0].tokenIds).toEqual(referenceGreedy(prompt, 20, 4));
  });

  it('backs a prefix hit that would end inside an image off to the block where the image starts', async () => {
    // The image takes 26..37: the two full blocks a repeat could reuse end at 32, inside it.
    const prompt = promptWithImage(26, 4);
    const engine = await start({ mmProcessorCacheBytes: 0 });
    const first = await finalOutput(engine, imageRequest(red, 'red', prompt, 26));
    const again = await finalOutput(engine, imageRequest(red, 'red', prompt, 26));
    expect(again.numCachedTokens).toBe(16);
    expect(again.outputs[0].tokenIds).toEqual(first.outputs[0].tokenIds);
    expect(again.outputs[0].tokenIds).toEqual(referenceGreedy(prompt, 26, 4));
  });

  it('recomputes a preempted request with its image whole', async () => {
    const prompt = promptWithImage(10, 6);
    const solo = await start({ enablePrefixCaching: false });
    const want = await finalOutput(solo, imageRequest(red, 'red', prompt, 10, 30));
    const tight = await start({ enablePrefixCaching: false, maxModelLen: 64, maxNumBatchedTokens: 16, kvCacheMemoryBytes: 4 * storedBytesPerBlock(model) });
    const { result, stats } = await recording(tight, () => Promise.all([0, 1].map(() => finalOutput(tight, imageRequest(red, 'red', prompt, 10, 30)))));
    expect(stats.reduce((n, s) => n + s.numPreemptions, 0)).toBeGreaterThan(0);
    expect(result.map((r) => r.outputs[0].tokenIds)).toEqual([want.outputs[0].tokenIds, want.outputs[0].tokenIds]);
  });

  it("refuses to start where an image is larger than max_num_batched_tokens (vLLM's message)", async () => {
    await expect(start({ maxNumBatchedTokens: 8 })).rejects.toThrow(
      'Chunked MM input disabled but max_tokens_per_mm_item (12) is larger than max_num_batched_tokens (8). Please increase max_num_batched_tokens.',
    );
  });
});
