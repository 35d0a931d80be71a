// A request's adapter through the in-process engine on stories260K, with seeded PEFT adapters read
// by the real loader and run by the real runner: --max-loras per step, the --max-cpu-loras LRU
// with reloads on demand, load errors, unload while in use, n > 1, preemption, and the prefix
// cache keyed by adapter.

import { join } from 'node:path';
import { createInProcessEngine } from '../../../src/engine';
import { beamSearch } from '../../../src/engine/beam-search';
import { RequestValidationError } from '../../../src/engine/errors';
import { createRunner } from '../../../src/model/runner';
import type { EngineClient, EngineOptions, LoraEngineOptions, LoraRequest } from '../../../src/engine/types';
import type { DecoderArchConfig, LoadedModel } from '../../../src/model/types';
import { needs } from '../../helpers/needs';
import { tempDirPerSuite } from '../../helpers/lora-files';
import { CountingLoader, emptyLoraLog, recordingLoraRunner, writeTestAdapter, type LoraRunnerLog } from '../../helpers/lora-engine-fixtures';
import { collect, engineOptions, finalOutput, loadStories, prompts, request, STORIES, storedBytesPerBlock } from './engine-fixtures';

const LORA: LoraEngineOptions = { maxLoras: 2, maxRank: 16, maxCpuLoras: 4, dtype: 'auto' };

needs(STORIES).describe('LoRA requests through the engine', () => {
  let model: LoadedModel;
  const dir = tempDirPerSuite('lora-engine-');
  const adapters: LoraRequest[] = [];
  const lora = (id: number) => adapters[id - 1];
  beforeAll(async () => {
    model = await loadStories();
    for (let id = 1; id <= 5; id++) adapters.push(writeTestAdapter(dir(), model.config as DecoderArchConfig, id));
  });

  async function withEngine(overrides: Partial<EngineOptions>, fn: (engine: EngineClient, log: LoraRunnerLog, files: CountingLoader) => Promise<void>): Promise<void> {
    const log = emptyLoraLog();
    const files = new CountingLoader();
    const engine = await createInProcessEngine(model, engineOptions({ lora: LORA, ...overrides }), {
      createRunner: recordingLoraRunner(createRunner, log),
      loraLoader: files.load,
    });
    try {
      await fn(engine, log, files);
    } finally {
      await engine.shutdown();
    }
  }

  it('runs five adapters under max_loras 2: no step holds more than two, every request finishes', async () => {
    await withEngine({}, async (engine, log) => {
      const ps = prompts(model, 10);
      const reqs = ps.map((p, i) => request(p, {}, i % 6 === 5 ? {} : { lora: lora((i % 5) + 1) }));
      const finals = await Promise.all(reqs.map((r) => finalOutput(engine, r)));
      for (const f of finals) expect(f.outputs[0].tokenIds).toHaveLength(12);
      expect(Math.max(...log.steps.map((ids) => ids.length))).toBe(2);
      expect(new Set(log.steps.flat())).toEqual(new Set([1, 2, 3, 4, 5]));
    });
  });

  it('greedy outputs follow each adapter, and a step mixing adapters and the base model gives each what it gets alone', async () => {
    await withEngine({}, async (engine, log) => {
      const [p] = prompts(model, 1);
      const tokens = async (extra: Parameters<typeof request>[2]) => (await finalOutput(engine, request(p, {}, extra))).outputs[0].tokenIds;
      const alone = [await tokens({}), await tokens({ lora: lora(1) }), await tokens({ lora: lora(2) })];
      expect(alone[1]).not.toEqual(alone[0]);
      expect(alone[2]).not.toEqual(alone[0]);
      expect(alone[2]).not.toEqual(alone[1]);
      log.steps.length = 0;
      const mixed = await Promise.all([tokens({}), tokens({ lora: lora(1) }), tokens({ lora: lora(2) })]);
      expect(mixed).toEqual(alone);
      expect(log.steps.some((ids) => ids.length === 2)).toBe(true);
    });
  });

  it('a batch of 32 greedy requests spread over four adapters and the base model gives each request what it gets alone', async () => {
    await withEngine({ lora: { ...LORA, maxLoras: 4 }, maxNumSeqs: 32 }, async (engine, log) => {
      const ps = prompts(model, 32);
      const extra = (i: number) => (i % 5 === 0 ? {} : { lora: lora(i % 5) });
      const tokens = async (i: number) => (await finalOutput(engine, request(ps[i], {}, extra(i)))).outputs[0].tokenIds;
      const alone: number[][] = [];
      for (let i = 0; i < ps.length; i++) alone.push(await tokens(i));
      log.steps.length = 0;
      const together = await Promise.all(ps.map((_, i) => tokens(i)));
      expect(together).toEqual(alone);
      expect(Math.max(...log.steps.map((ids) => ids.length))).toBe(4);
    });
  });

  it('keeps at most max_cpu_loras adapters, reloads a dropped one on demand, and its output stays the same', async () => {
    await withEngine({ lora: { ...LORA, maxLoras: 1, maxCpuLoras: 1 } }, async (engine, log, files) => {
      const [p] = prompts(model, 1);
      const first = await finalOutput(engine, request(p, {}, { lora: lora(1) }));
      await finalOutput(engine, request(p, {}, { lora: lora(2) }));
      const again = await finalOutput(engine, request(p, {}, { lora: lora(1) }));
      expect(files.reads).toEqual([lora(1).path, lora(2).path, lora(1).path]);
      // As vLLM, the new adapter loads before the least recently used idle one is dropped.
      expect(log.events).toEqual(['add 1', 'add 2', 'remove 1', 'add 1', 'remove 2']);
      expect(again.outputs[0].tokenIds).toEqual(first.outputs[0].tokenIds);
      expect(engine.stats().runningLoraAdapters).toEqual([]);
    });
  });

  it('lets base requests run while an adapter loads', async () => {
    await withEngine({}, async (engine, log, files) => {
      const [p1, p2] = prompts(model, 2);
      files.hold = true;
      const waiting = finalOutput(engine, request(p1, {}, { lora: lora(3) }));
      const base = await finalOutput(engine, request(p2));
      expect(base.outputs[0].tokenIds).toHaveLength(12);
      expect(log.steps.flat()).toEqual([]);
      files.release();
      expect((await waiting).outputs[0].tokenIds).toHaveLength(12);
      expect(log.steps.flat()).toContain(3);
    });
  });

  it('rejects load_lora_adapter with the loader’s message and keeps serving; a request whose adapter fails to load fails alone', async () => {
    await withEngine({}, async (engine) => {
      const gone: LoraRequest = { name: 'gone', id: 9, path: join(dir(), 'missing') };
      await expect(engine.loadLora(gone)).rejects.toThrow(`No adapter found for ${gone.path}`);
      await expect(engine.loadLora({ ...lora(1), name: 'again', id: 10 })).resolves.toBeUndefined();
      const [p1, p2] = prompts(model, 2);
      const doomed = finalOutput(engine, request(p1, {}, { lora: gone }));
      const fine = finalOutput(engine, request(p2, {}, { lora: lora(2) }));
      const failed = await doomed;
      expect(failed.outputs[0].finishReason).toBe('error');
      expect(failed.error).toBe(`LoRA adapter 'gone' could not be loaded from ${gone.path}: No adapter found for ${gone.path}`);
      expect((await fine).outputs[0].tokenIds).toHaveLength(12);
      expect(engine.health().alive).toBe(true);
    });
  });

  it('refuses an adapter of a rank above max_lora_rank with the loader’s message', async () => {
    await withEngine({ lora: { ...LORA, maxRank: 8 } }, async (engine) => {
      await expect(engine.loadLora(lora(2))).rejects.toThrow('LoRA rank 16 is greater than max_lora_rank 8.');
    });
  });

  it('unloading an adapter in use lets its running request finish, then drops it', async () => {
    await withEngine({}, async (engine, log) => {
      await engine.loadLora(lora(1));
      expect(log.events).toEqual(['add 1']);
      const [p] = prompts(model, 1);
      const outputs: number[] = [];
      let unloaded: Promise<void> | null = null;
      for await (const out of engine.generate(request(p, { max_tokens: 8, output_kind: 1 }, { lora: lora(1) }))) {
        outputs.push(...out.outputs[0].tokenIds);
        unloaded ??= engine.unloadLora(1);
      }
      await unloaded;
      expect(outputs).toHaveLength(8);
      expect(log.events).toEqual(['add 1', 'remove 1']);
      expect(log.steps.every((ids) => ids.length === 1 && ids[0] === 1)).toBe(true);
    });
  });

  it('n > 1 children and a preempted request keep their adapter', async () => {
    const perBlock = storedBytesPerBlock(model);
    await withEngine({ maxModelLen: 96, kvCacheMemoryBytes: perBlock * 10 }, async (engine, log) => {
      const ps = prompts(model, 4);
      let preemptions = 0;
      engine.onIteration((it) => (preemptions += it.numPreemptions));
      const parallel = finalOutput(engine, request(ps[0], { n: 3, temperature: 1, seed: 5, max_tokens: 30 }, { lora: lora(1) }));
      const others = ps.slice(1).map((p) => finalOutput(engine, request(p, { max_tokens: 40 }, { lora: lora(2) })));
      const finals = await Promise.all([parallel, ...others]);
      expect(preemptions).toBeGreaterThan(0);
      expect(finals[0].outputs).toHaveLength(3);
      for (const f of finals) for (const o of f.outputs) expect(o.finishReason).toBe('length');
      // Every step ran its rows under the request's adapter only (the wrapper throws on others).
      expect(new Set(log.steps.flat())).toEqual(new Set([1, 2]));
    });
  });

  it('beam search runs every beam under the request’s adapter', async () => {
    await withEngine({}, async (engine, log) => {
      const [p] = prompts(model, 1);
      const result = await beamSearch(engine, request(p, { use_beam_search: true, n: 2, max_tokens: 4 }, { lora: lora(3) }));
      expect(result.outputs).toHaveLength(2);
      expect(log.steps.length).toBeGreaterThan(0);
      expect(log.steps.every((ids) => ids.length === 1 && ids[0] === 3)).toBe(true);
    });
  });

  it('reports the adapters of running and waiting requests in the scheduler stats', async () => {
    await withEngine({ lora: { ...LORA, maxLoras: 1 } }, async (engine) => {
      const ps = prompts(model, 2);
      const seen: string[] = [];
      engine.onIteration(() => {
        const s = engine.stats();
        seen.push(`${(s.runningLoraAdapters ?? []).join()}|${(s.waitingLoraAdapters ?? []).join()}`);
      });
      await Promise.all([finalOutput(engine, request(ps[0], {}, { lora: lora(1) })), finalOutput(engine, request(ps[1], {}, { lora: lora(2) }))]);
      expect(seen).toContain('ad1|ad2');
      expect(seen).toContain('ad2|');
      expect(seen[seen.length - 1]).toBe('|');
    });
  });

  it('serves a cached prompt prefix only to requests of the same adapter', async () => {
    await withEngine({}, async (engine) => {
      const p = prompts(model, 12).reduce((longest, q) => (q.length > longest.length ? q : longest));
      expect(p.length).toBeGreaterThan(17);
      const cached = async (extra: Parameters<typeof request>[2]) => (await finalOutput(engine, request(p, { max_tokens: 2 }, extra))).numCachedTokens;
      expect(await cached({ lora: lora(1) })).toBe(0);
      expect(await cached({ lora: lora(2) })).toBe(0);
      expect(await cached({})).toBe(0);
      expect(await cached({ lora: lora(1) })).toBeGreaterThanOrEqual(16);
      expect(await cached({})).toBeGreaterThanOrEqual(16);
      expect(await cached({ lora: lora(1), cacheSalt: 'tenant' })).toBe(0);
    });
  });

  it('never serves a prefix cached under an adapter to the same name loaded again with other weights', async () => {
    await withEngine({}, async (engine) => {
      const p = prompts(model, 12).reduce((longest, q) => (q.length > longest.length ? q : longest));
      const run = async (adapter: LoraRequest) => finalOutput(engine, request(p, { max_tokens: 8 }, { lora: adapter }));
      const first = { ...lora(1), name: 'reused' };
      await engine.loadLora(first);
      await run(first);
      expect((await run(first)).numCachedTokens).toBeGreaterThanOrEqual(16);
      await engine.unloadLora(first.id);
      // The same name, another adapter's weights, a new id (as the server gives each load).
      const again = { ...lora(2), name: 'reused', id: 42 };
      await engine.loadLora(again);
      const reloaded = await run(again);
      expect(reloaded.numCachedTokens).toBe(0);
      expect(reloaded.outputs[0].tokenIds).toEqual((await run(lora(2))).outputs[0].tokenIds);
    });
  });

  it('refuses a request naming an adapter when LoRA is not enabled', async () => {
    const engine = await createInProcessEngine(model, engineOptions());
    try {
      const [p] = prompts(model, 1);
      const refused = collect(engine, request(p, {}, { lora: lora(1) }));
      await expect(refused).rejects.toThrow(RequestValidationError);
      await expect(collect(engine, request(p, {}, { lora: lora(1) }))).rejects.toThrow('Got lora_request ad1 but LoRA is not enabled!');
      await expect(engine.loadLora(lora(1))).rejects.toThrow('LoRA is not enabled');
    } finally {
      await engine.shutdown();
    }
  });
});
