/** @jest-environment ./test/helpers/ort-environment.js */
// The engine on the real runner (stories260K): batching, chunked prefill, preemption,
// prefix caching and n > 1 never change what a request generates.

import { createInProcessEngine } from '../../../src/engine';
import type { EngineClient, IterationStats } from '../../../src/engine/types';
import type { LoadedModel } from '../../../src/model/types';
import { collect, engineOptions, finalOutput, loadStories, prompts, request, STORIES, storedBytesPerBlock } from './engine-fixtures';
import { needs } from '../../helpers/needs';

const onStories = needs(STORIES);

onStories.describe('engine batching on stories260K', () => {
  let model: LoadedModel;
  let engine: EngineClient;
  const iterations: IterationStats[] = [];

  beforeAll(async () => {
    model = await loadStories();
    engine = await createInProcessEngine(model, engineOptions());
    engine.onIteration((s) => iterations.push(s));
  });
  afterAll(async () => {
    await engine?.shutdown();
  });

  it('greedy outputs of 32 concurrent requests equal each one run alone', async () => {
    const ps = prompts(model, 32);
    const solo: number[][] = [];
    for (const p of ps) solo.push((await finalOutput(engine, request(p))).outputs[0].tokenIds);
    iterations.length = 0;
    const batched = await Promise.all(ps.map((p) => finalOutput(engine, request(p))));
    expect(batched.map((o) => o.outputs[0].tokenIds)).toEqual(solo);
    // They really shared steps, and long prompts were chunked under the 64-token budget.
    const maxBatch = Math.max(...iterations.map((s) => s.generationTokens));
    expect(maxBatch).toBeGreaterThan(8);
    expect(engine.stats().kvCacheUsage).toBe(0);
  });

  it('seeded sampling gives the same tokens alone and in a batch', async () => {
    const ps = prompts(model, 8);
    const p = { temperature: 1, seed: 1234, max_tokens: 16 };
    const alone = (await finalOutput(engine, request(ps[5], p))).outputs[0].tokenIds;
    const batch = await Promise.all(ps.map((prompt, i) => finalOutput(engine, request(prompt, i === 5 ? p : { temperature: 1 }))));
    expect(batch[5].outputs[0].tokenIds).toEqual(alone);
  });

  it('prefix-cache hits give the same outputs as misses', async () => {
    const long = model.tokenizer!.encode('Once upon a time there was a little girl named Lily. She loved to play outside in the sun with her dog.', {
      addSpecialTokens: true,
    });
    expect(long.length).toBeGreaterThan(32);
    const salted = { cacheSalt: 'fresh-salt-1' };
    const miss = await finalOutput(engine, request(long, {}, salted));
    expect(miss.numCachedTokens).toBe(0);
    iterations.length = 0;
    const hit = await finalOutput(engine, request(long, {}, salted));
    expect(hit.numCachedTokens).toBe(Math.floor((long.length - 1) / 16) * 16);
    expect(hit.outputs[0].tokenIds).toEqual(miss.outputs[0].tokenIds);
    const hits = iterations.reduce((sum, s) => sum + s.prefixCacheHits, 0);
    expect(hits).toBe(hit.numCachedTokens);
    // Another salt never reuses those blocks.
    expect((await finalOutput(engine, request(long, {}, { cacheSalt: 'other-salt' }))).numCachedTokens).toBe(0);
  });

  it('n > 1 children share the prompt KV and each equals a solo run with its child seed', async () => {
    const prompt = prompts(model, 20)[19]; // not a multiple of the block size: the partial block is copied
    expect(prompt.length % 16).not.toBe(0);
    const out = await finalOutput(engine, request(prompt, { n: 3, temperature: 1, seed: 77, max_tokens: 10 }));
    expect(out.outputs.map((o) => o.index)).toEqual([0, 1, 2]);
    for (let i = 0; i < 3; i++) {
      const solo = await finalOutput(engine, request(prompt, { temperature: 1, seed: 77 + i, max_tokens: 10 }));
      expect(out.outputs[i].tokenIds).toEqual(solo.outputs[0].tokenIds);
    }
    expect(engine.stats().kvCacheUsage).toBe(0);
  });

  it('best_of > n returns the n completions with the highest cumulative logprob', async () => {
    const prompt = prompts(model, 4)[3];
    const all = await finalOutput(engine, request(prompt, { n: 4, temperature: 1, seed: 5, max_tokens: 8, logprobs: 0 }));
    const best = await finalOutput(engine, request(prompt, { n: 2, best_of: 4, temperature: 1, seed: 5, max_tokens: 8, logprobs: 0 }));
    const ranked = [...all.outputs].sort((a, b) => b.cumulativeLogprob! - a.cumulativeLogprob!);
    expect(best.outputs.map((o) => o.tokenIds)).toEqual(ranked.slice(0, 2).map((o) => o.tokenIds));
    expect(best.outputs.map((o) => o.index)).toEqual([0, 1]);
  });

  it('streams DELTA and CUMULATIVE outputs that add up to the FINAL_ONLY one', async () => {
    const prompt = prompts(model, 3)[2];
    const final = await collect(engine, request(prompt, { output_kind: 2, max_tokens: 10 }));
    expect(final).toHaveLength(1);
    const deltas = await collect(engine, request(prompt, { output_kind: 1, max_tokens: 10 }));
    const cumulative = await collect(engine, request(prompt, { output_kind: 0, max_tokens: 10 }));
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.flatMap((o) => o.outputs[0].tokenIds)).toEqual(final[0].outputs[0].tokenIds);
    expect(deltas.map((o) => o.outputs[0].text).join('')).toBe(final[0].outputs[0].text);
    expect(cumulative[cumulative.length - 1].outputs[0]).toEqual(final[0].outputs[0]);
    // The continuation keeps the leading space that a standalone decode strips.
    expect(final[0].outputs[0].text.trimStart()).toBe(model.tokenizer!.decode(final[0].outputs[0].tokenIds));
  });
});

onStories.describe('prompt logprobs and iteration stats', () => {
  it('prompt logprobs are the same whether the prompt is prefilled in chunks or at once', async () => {
    const model = await loadStories();
    const text = 'Once upon a time there was a little girl named Lily. She loved to play outside in the sun with her dog Max.';
    const prompt = model.tokenizer!.encode(text, { addSpecialTokens: true });
    const run = async (budget: number) => {
      const engine = await createInProcessEngine(model, engineOptions({ maxNumBatchedTokens: budget }));
      const out = await finalOutput(engine, request(prompt, { prompt_logprobs: 2, max_tokens: 2 }));
      await engine.shutdown();
      return out.promptLogprobs!;
    };
    const chunked = await run(7);
    const whole = await run(256);
    expect(chunked).toHaveLength(prompt.length);
    expect(chunked[0]).toBeNull();
    chunked.slice(1).forEach((entry, i) => {
      const ref = whole[i + 1]!;
      expect(entry!.chosen.tokenId).toBe(prompt[i + 1]);
      expect(entry!.chosen.logprob).toBeCloseTo(ref.chosen.logprob, 4);
      expect(entry!.top.map((t) => t.tokenId)).toEqual(ref.top.map((t) => t.tokenId));
    });
  });

  it('reports prompt/generation tokens, TTFT, ITL and finished-request stats per step', async () => {
    const model = await loadStories();
    const engine = await createInProcessEngine(model, engineOptions());
    const stats: IterationStats[] = [];
    engine.onIteration((s) => stats.push(s));
    const ps = prompts(model, 3);
    await Promise.all(ps.map((p) => finalOutput(engine, request(p, { max_tokens: 5 }))));
    await engine.shutdown();
    const sum = (f: (s: IterationStats) => number) => stats.reduce((acc, s) => acc + f(s), 0);
    expect(sum((s) => s.promptTokens)).toBe(ps.reduce((a, p) => a + p.length, 0));
    expect(sum((s) => s.generationTokens)).toBe(15);
    expect(sum((s) => s.timeToFirstTokens.length)).toBe(3);
    expect(sum((s) => s.interTokenLatencies.length)).toBe(12);
    const finished = stats.flatMap((s) => s.finished);
    expect(finished.map((f) => f.finishReason)).toEqual(['length', 'length', 'length']);
    for (const f of finished) {
      expect(f.generationTokens).toBe(5);
      expect(f.e2eLatency).toBeGreaterThanOrEqual(f.inferenceTime);
      expect(f.inferenceTime).toBeCloseTo(f.prefillTime + f.decodeTime, 6);
    }
  });

  it('request timings hold when the wall clock steps while requests run (NTP, a paused VM)', async () => {
    const model = await loadStories();
    const engine = await createInProcessEngine(model, engineOptions());
    const stats: IterationStats[] = [];
    engine.onIteration((s) => stats.push(s));
    const realNow = Date.now.bind(Date);
    let step = 0;
    // Each read of the wall clock lands 40 s away from the last, alternately ahead and behind.
    const wall = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + (step++ % 2 === 0 ? 40_000 : -40_000));
    try {
      await Promise.all(prompts(model, 2).map((p) => finalOutput(engine, request(p, { max_tokens: 4 }))));
    } finally {
      wall.mockRestore();
      await engine.shutdown();
    }
    const finished = stats.flatMap((s) => s.finished);
    expect(finished).toHaveLength(2);
    for (const f of finished) {
      expect(f.e2eLatency).toBeGreaterThanOrEqual(f.inferenceTime);
      expect(f.e2eLatency).toBeLessThan(30);
    }
    for (const ttft of stats.flatMap((s) => s.timeToFirstTokens)) expect(ttft).toBeGreaterThanOrEqual(0);
  });
});

onStories.describe('engine under a tiny KV budget', () => {
  it('preempts and recomputes, giving the same greedy outputs', async () => {
    const model = await loadStories();
    const big = await createInProcessEngine(model, engineOptions({ maxModelLen: 96 }));
    const ps = prompts(model, 12);
    const expected: number[][] = [];
    for (const p of ps) expected.push((await finalOutput(big, request(p, { max_tokens: 40 }))).outputs[0].tokenIds);
    await big.shutdown();

    const perBlock = storedBytesPerBlock(model);
    const tiny = await createInProcessEngine(model, engineOptions({ maxModelLen: 96, kvCacheMemoryBytes: perBlock * 12 }));
    let preemptions = 0;
    tiny.onIteration((s) => (preemptions += s.numPreemptions));
    const outs = await Promise.all(ps.map((p) => finalOutput(tiny, request(p, { max_tokens: 40 }))));
    expect(outs.map((o) => o.outputs[0].tokenIds)).toEqual(expected);
    expect(preemptions).toBeGreaterThan(0);
    expect(tiny.stats().kvCacheUsage).toBe(0);
    await tiny.shutdown();
  });

  it('n > 1 children preempted under memory pressure still equal their solo runs', async () => {
    const model = await loadStories();
    const ps = prompts(model, 6);
    const sampling = (i: number) => ({ n: 2, temperature: 1, seed: 100 * i, max_tokens: 30 });
    const big = await createInProcessEngine(model, engineOptions({ maxModelLen: 96 }));
    const expected = await Promise.all(ps.map((p, i) => finalOutput(big, request(p, sampling(i)))));
    await big.shutdown();

    const perBlock = storedBytesPerBlock(model);
    const tiny = await createInProcessEngine(model, engineOptions({ maxModelLen: 96, kvCacheMemoryBytes: perBlock * 10 }));
    let preemptions = 0;
    tiny.onIteration((s) => (preemptions += s.numPreemptions));
    const outs = await Promise.all(ps.map((p, i) => finalOutput(tiny, request(p, sampling(i)))));
    const tokens = (o: { outputs: { tokenIds: number[] }[] }) => o.outputs.map((c) => c.tokenIds);
    expect(outs.map(tokens)).toEqual(expected.map(tokens));
    expect(preemptions).toBeGreaterThan(0);
    expect(tiny.stats().kvCacheUsage).toBe(0);
    await tiny.shutdown();
  });

  it('under the priority policy a later, more urgent request is served first', async () => {
    const model = await loadStories();
    const engine = await createInProcessEngine(model, engineOptions({ maxNumSeqs: 1, schedulingPolicy: 'priority' }));
    const ps = prompts(model, 3);
    const order: string[] = [];
    const run = async (name: string, p: number[], priority: number) => {
      await finalOutput(engine, request(p, { max_tokens: 4 }, { priority }));
      order.push(name);
    };
    // All three are queued before the first step; one runs at a time, lowest value first.
    await Promise.all([run('first', ps[0], 0), run('low', ps[1], 10), run('urgent', ps[2], -5)]);
    expect(order).toEqual(['urgent', 'first', 'low']);
    await engine.shutdown();
  });
});
