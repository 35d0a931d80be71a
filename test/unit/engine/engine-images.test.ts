/** @jest-environment ./test/helpers/ort-environment.js */
// Images through the engine on stories260K with a test-only tower (PixelEncoder: a real function
// of the preprocessed pixels): the encoder step's rows land at their placements (greedy tokens
// equal the float64 reference fed the same rows), chunked prefill across an image equals one
// prefill, the encoder cache, prefix-cache blocks keyed by image, preemption, failures, M-RoPE.
import { createInProcessEngine } from '../../../src/engine';
import { RequestValidationError } from '../../../src/engine/errors';
import { createRunner } from '../../../src/model/runner';
import { preprocessImage } from '../../../src/model/vision/preprocess-image';
import type { DecodedImage, EngineClient, EngineOptions, EngineRequest, IterationStats } from '../../../src/engine/types';
import type { LoadedModel, ModelRunner, StepSequence } from '../../../src/model/types';
import { needs } from '../../helpers/needs';
import { PixelEncoder, seededImage, testVisionModel, tinyGemma3Processor } from '../../helpers/pixel-encoder';
import { referenceForward } from '../../helpers/reference-forward';
import { argmax, NATIVE_ADDON } from '../../helpers/runner-driver';
import { engineOptions, finalOutput, loadStories, recording, request, STORIES, storedBytesPerBlock } from './engine-fixtures';

const TOKENS_PER_IMAGE = 12;
const IMAGE_TOKEN = 5;
/** 20 text tokens, an image's 12 rows (positions 20..31, in the second 16-token block), 10 more. */
const IMAGE_AT = 20;
const PROMPT = promptWithImage(IMAGE_AT, 10);
const PROMPT_FORMAT = { placeholderText: '<image>', placeholderTokenId: IMAGE_TOKEN, imageTokenId: IMAGE_TOKEN, prefix: [], suffix: [] };

function withImage(model: LoadedModel, encoder: PixelEncoder): LoadedModel {
  return { ...model, vision: testVisionModel({ encoder, tokensPerImage: TOKENS_PER_IMAGE, prompt: PROMPT_FORMAT }) };
}

/** A prompt of `before` text tokens, an image's run, then `after` more. */
function promptWithImage(before: number, after: number): number[] {
  return [1, ...Array.from({ length: before - 1 }, (_, i) => 30 + i), ...new Array<number>(TOKENS_PER_IMAGE).fill(IMAGE_TOKEN), ...Array.from({ length: after }, (_, i) => 90 + i)];
}

function imageRequest(image: DecodedImage, hash: string, params: Parameters<typeof request>[1] = {}, extra: Partial<EngineRequest> = {}, prompt = PROMPT, at = IMAGE_AT): EngineRequest {
  return request(prompt, { max_tokens: 4, ...params }, { multiModal: { images: [image], processorKwargs: {}, placements: [{ offset: at, length: TOKENS_PER_IMAGE, hash }] }, ...extra });
}

/** Greedy tokens of the float64 reference with the image's rows (from a fresh encoder of the same seed) at its positions. */
function referenceGreedy(model: LoadedModel, image: DecodedImage, count: number, prompt = PROMPT, at = IMAGE_AT): number[] {
  const hidden = model.config.hiddenSize;
  const rows = new PixelEncoder(hidden).encode(preprocessImage(tinyGemma3Processor(TOKENS_PER_IMAGE), { width: image.width, height: image.height, data: image.rgb }));
  const given = new Map(Array.from({ length: TOKENS_PER_IMAGE }, (_, r) => [at + r, rows.subarray(r * hidden, (r + 1) * hidden)]));
  const tokens = [...prompt];
  for (let i = 0; i < count; i++) {
    const logits = referenceForward(model.config, model.weights!, tokens, undefined, given);
    tokens.push(argmax(logits[logits.length - 1]));
  }
  return tokens.slice(prompt.length);
}

const sum = (stats: IterationStats[], key: 'mmCacheQueries' | 'mmCacheHits' | 'numPreemptions'): number => stats.reduce((n, s) => n + (s[key] ?? 0), 0);

needs(STORIES, NATIVE_ADDON).describe('images through the engine (stories260K, test tower)', () => {
  let model: LoadedModel;
  const engines: EngineClient[] = [];
  const red = seededImage(9, 7, 1);
  const blue = seededImage(6, 11, 2);

  async function start(encoder: PixelEncoder, options: Partial<EngineOptions> = {}, seams = {}): Promise<EngineClient> {
    const engine = await createInProcessEngine(withImage(model, encoder), engineOptions({ maxNumBatchedTokens: 256, ...options }), seams);
    engines.push(engine);
    return engine;
  }

  beforeAll(async () => (model = await loadStories()));
  afterAll(async () => {
    for (const engine of engines) await engine.shutdown();
  });

  it('puts the encoder rows at the image positions: greedy tokens equal the reference fed the same rows', async () => {
    const engine = await start(new PixelEncoder(model.config.hiddenSize));
    const redOut = await finalOutput(engine, imageRequest(red, 'red'));
    const blueOut = await finalOutput(engine, imageRequest(blue, 'blue'));
    expect(redOut.outputs[0].tokenIds).toEqual(referenceGreedy(model, red, 4));
    expect(blueOut.outputs[0].tokenIds).toEqual(referenceGreedy(model, blue, 4));
    expect(redOut.outputs[0].tokenIds).not.toEqual(blueOut.outputs[0].tokenIds);
    // n = 2: the second completion forks on the prompt's KV and reads the same rows.
    const both = await finalOutput(engine, imageRequest(blue, 'blue', { n: 2 }));
    expect(both.outputs.map((o) => o.tokenIds)).toEqual([blueOut.outputs[0].tokenIds, blueOut.outputs[0].tokenIds]);
  });

  it('gives the same tokens and logprobs when prefill chunks cut the image run', async () => {
    const whole = await start(new PixelEncoder(model.config.hiddenSize), { enablePrefixCaching: false });
    const chunked = await start(new PixelEncoder(model.config.hiddenSize), { enablePrefixCaching: false, maxNumBatchedTokens: 7 });
    const a = await finalOutput(whole, imageRequest(red, 'red', { max_tokens: 6, logprobs: 0 }));
    const b = await finalOutput(chunked, imageRequest(red, 'red', { max_tokens: 6, logprobs: 0 }));
    expect(b.outputs[0].tokenIds).toEqual(a.outputs[0].tokenIds);
    expect(b.outputs[0].cumulativeLogprob!).toBeCloseTo(a.outputs[0].cumulativeLogprob!, 4);
  });

  it('encodes a repeated image once (an encoder cache hit) and a different one again', async () => {
    const encoder = new PixelEncoder(model.config.hiddenSize);
    const engine = await start(encoder, { enablePrefixCaching: false });
    const { result, stats } = await recording(engine, async () => [
      await finalOutput(engine, imageRequest(red, 'red')),
      await finalOutput(engine, imageRequest(red, 'red')),
      await finalOutput(engine, imageRequest(blue, 'blue')),
    ]);
    expect(encoder.calls).toBe(2);
    expect(sum(stats, 'mmCacheQueries')).toBe(3);
    expect(sum(stats, 'mmCacheHits')).toBe(1);
    expect(result[1].outputs[0].tokenIds).toEqual(result[0].outputs[0].tokenIds);
  });

  it('encodes every time with --mm-processor-cache-gb 0', async () => {
    const encoder = new PixelEncoder(model.config.hiddenSize);
    const engine = await start(encoder, { enablePrefixCaching: false, mmProcessorCacheBytes: 0 });
    await finalOutput(engine, imageRequest(red, 'red'));
    await finalOutput(engine, imageRequest(red, 'red'));
    expect(encoder.calls).toBe(2);
  });

  it('shares prefix-cache blocks holding an image only with prompts of the same image', async () => {
    const engine = await start(new PixelEncoder(model.config.hiddenSize));
    const first = await finalOutput(engine, imageRequest(red, 'red'));
    // Same placeholder ids, other pixels: only the block before the image is shared.
    const other = await finalOutput(engine, imageRequest(blue, 'blue'));
    const again = await finalOutput(engine, imageRequest(red, 'red'));
    expect(first.numCachedTokens).toBe(0);
    expect(other.numCachedTokens).toBe(16);
    expect(again.numCachedTokens).toBe(32);
    expect(other.outputs[0].tokenIds).toEqual(referenceGreedy(model, blue, 4));
    expect(again.outputs[0].tokenIds).toEqual(first.outputs[0].tokenIds);
  });

  it('computes the image rows after a prefix hit that ends inside the image', async () => {
    // The image takes positions 10..21: the cached first block holds six of its rows, the rest are computed.
    const prompt = promptWithImage(10, 8);
    const engine = await start(new PixelEncoder(model.config.hiddenSize), { mmProcessorCacheBytes: 0 });
    await finalOutput(engine, imageRequest(red, 'red', {}, {}, prompt, 10));
    const again = await finalOutput(engine, imageRequest(red, 'red', {}, {}, prompt, 10));
    expect(again.numCachedTokens).toBe(16);
    expect(again.outputs[0].tokenIds).toEqual(referenceGreedy(model, red, 4, prompt, 10));
  });

  it('fails only the request whose image cannot be encoded, with a 400-class error', async () => {
    const engine = await start(new PixelEncoder(model.config.hiddenSize));
    const broken: DecodedImage = { width: 8, height: 8, rgb: new Uint8Array(10) };
    const [bad, good] = await Promise.allSettled([finalOutput(engine, imageRequest(broken, 'broken')), finalOutput(engine, imageRequest(red, 'red', { max_tokens: 8 }))]);
    expect(bad.status).toBe('rejected');
    expect((bad as PromiseRejectedResult).reason).toBeInstanceOf(RequestValidationError);
    expect(String((bad as PromiseRejectedResult).reason.message)).toMatch(/8x8 RGB image needs 192 bytes/);
    expect(good.status).toBe('fulfilled');
    expect((good as PromiseFulfilledResult<Awaited<ReturnType<typeof finalOutput>>>).value.outputs[0].finishReason).toBe('length');
    expect(engine.stats().kvCacheUsage).toBe(0);
  });

  it('re-supplies the image rows when a preempted request is recomputed (its pixels are gone by then)', async () => {
    const solo = await start(new PixelEncoder(model.config.hiddenSize), { mmProcessorCacheBytes: 0, enablePrefixCaching: false });
    const want = [await finalOutput(solo, imageRequest(red, 'red', { max_tokens: 40 })), await finalOutput(solo, imageRequest(blue, 'blue', { max_tokens: 40 }))];
    const encoder = new PixelEncoder(model.config.hiddenSize);
    const tight = await start(encoder, { mmProcessorCacheBytes: 0, enablePrefixCaching: false, maxModelLen: 96, kvCacheMemoryBytes: 6 * storedBytesPerBlock(model) });
    const { result, stats } = await recording(tight, () =>
      Promise.all([finalOutput(tight, imageRequest(red, 'red', { max_tokens: 40 })), finalOutput(tight, imageRequest(blue, 'blue', { max_tokens: 40 }))]),
    );
    expect(sum(stats, 'numPreemptions')).toBeGreaterThan(0);
    expect(encoder.calls).toBe(2);
    expect(result.map((r) => r.outputs[0].tokenIds)).toEqual(want.map((r) => r.outputs[0].tokenIds));
  });

  it('refuses images with speculative decoding', async () => {
    const engine = await start(new PixelEncoder(model.config.hiddenSize), { speculative: { method: 'ngram', numSpeculativeTokens: 2, promptLookupMin: 1, promptLookupMax: 3, model: null, disableByBatchSize: null } });
    await expect(finalOutput(engine, imageRequest(red, 'red'))).rejects.toThrow(/speculative decoding/);
  });

  it('passes each step the M-RoPE positions: the prompt rows as given, later ones index + delta', async () => {
    const steps: StepSequence[][] = [];
    const recordingRunner = async (m: LoadedModel, o: Parameters<typeof createRunner>[1]): Promise<ModelRunner> => {
      const runner = await createRunner(m, o);
      return new Proxy(runner, {
        get(target, key) {
          if (key === 'step') {
            return (batch: StepSequence[]) => {
              steps.push(batch);
              // The positions are checked here; the runner itself does not apply M-RoPE.
              return target.step(batch.map((s) => ({ ...s, ropePositions: undefined })));
            };
          }
          const value: unknown = Reflect.get(target, key, target);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    };
    const engine = await start(new PixelEncoder(model.config.hiddenSize), { maxNumBatchedTokens: 16 }, { createRunner: recordingRunner });
    const n = PROMPT.length;
    const positions = Int32Array.from({ length: 3 * n }, (_, i) => 1000 * Math.floor(i / n) + (i % n) * 2);
    const req = imageRequest(red, 'red', { max_tokens: 3 });
    req.multiModal!.mrope = { positions, delta: -7 };
    await finalOutput(engine, req);
    const seen: number[][] = [[], [], []];
    const embedded: number[] = [];
    for (const batch of steps) {
      for (const s of batch) {
        const rows = s.tokens.length;
        for (let axis = 0; axis < 3; axis++) for (let r = 0; r < rows; r++) seen[axis][s.positionOffset + r] = s.ropePositions![axis * rows + r];
        for (const e of s.inputEmbeds ?? []) for (let r = 0; r < e.data.length / model.config.hiddenSize; r++) embedded.push(s.positionOffset + e.row + r);
      }
    }
    for (let axis = 0; axis < 3; axis++) {
      for (let p = 0; p < n; p++) expect(seen[axis][p]).toBe(positions[axis * n + p]);
      for (let p = n; p < n + 2; p++) expect(seen[axis][p]).toBe(p - 7);
    }
    expect(embedded).toEqual(Array.from({ length: TOKENS_PER_IMAGE }, (_, r) => IMAGE_AT + r));
  });
});
