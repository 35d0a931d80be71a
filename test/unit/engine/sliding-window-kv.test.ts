/** @jest-environment ./test/helpers/ort-environment.js */
// Sliding-window layers in a KV pool of their own (blocks behind the window released and reused)
// compute exactly what one pool for every layer computes with the window applied in the kernel:
// the memory layout changes, the numbers must not. Checked on the runner against the float64
// reference, and through the engine with mixed batches, chunked prefill, preemption, aborts and
// prefix caching, with a window shorter than every prompt.

import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { createInProcessEngine } from '../../../src/engine';
import { CompletionProcessorFactory } from '../../../src/engine/core/completion-processor';
import { EngineCore } from '../../../src/engine/core/engine-core';
import { normalizeKvTransferConfig } from '../../../src/engine/kv-transfer/kv-transfer-config';
import { HybridKvCacheManager } from '../../../src/engine/core/hybrid-kv-cache';
import { RELEASED } from '../../../src/engine/core/kv-cache-manager';
import { planKvCache } from '../../../src/engine/core/kv-plan';
import { Sequence } from '../../../src/engine/core/sequence';
import type { EngineRequest, IterationStats, RequestOutput } from '../../../src/engine/types';
import { createRunner, kvPoolGroups } from '../../../src/model/runner';
import { kvLayerGroups, windowBlocksPerSequence, type KvPool } from '../../../src/model/runner/kv-pools';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { ModelRunner } from '../../../src/model/types';
import { needs } from '../../helpers/needs';
import { referenceForward } from '../../helpers/reference-forward';
import { maxAbsDiff, NATIVE_ADDON } from '../../helpers/runner-driver';
import { engineOptions, finalOutput, request } from './engine-fixtures';

const WINDOW = 6;
const BS = 4;
const config = llamaConfig({
  numLayers: 4,
  hiddenSize: 64,
  numHeads: 4,
  numKvHeads: 2,
  vocabSize: 256,
  slidingWindow: WINDOW,
  layerTypes: ['sliding_attention', 'sliding_attention', 'full_attention', 'sliding_attention'],
});
const model = randomModel(config, 11);
const tokensOf = (n: number, seed: number) => Array.from({ length: n }, (_, i) => (seed * 37 + i * 11) % config.vocabSize);

/** The model's two pools: full attention (layer 2) and the sliding layers. */
function pools(full: number, sliding: number): KvPool[] {
  const [f, s] = kvLayerGroups(config);
  return [
    { ...f, numBlocks: full },
    { ...s, numBlocks: sliding },
  ];
}

const BACKENDS = [
  { name: 'native-f32', opts: {} },
  { name: 'onnx-segments', opts: { smallDecoder: false } },
];

needs(NATIVE_ADDON).describe('sliding-window KV pool', () => {
  it('groups the layers by window and plans a pool sized for the window', () => {
    expect(kvLayerGroups(config)).toEqual([
      { window: 0, layers: [2] },
      { window: WINDOW, layers: [0, 1, 3] },
    ]);
    expect(kvPoolGroups(model)).toEqual(kvLayerGroups(config));
    const options = { ...engineOptions({ blockSize: BS, maxModelLen: null, maxNumSeqs: 4, maxNumBatchedTokens: 16 }), kvCacheDtype: 'float32' as const };
    const slidingBlocks = 4 * (windowBlocksPerSequence(WINDOW, BS, 1) + 1) + 16 / BS;
    // Pool 0 as the override says (it bounds max_model_len); the sliding pool holds 4 sequences' windows plus one step's 16 tokens.
    const plan = planKvCache(model, { ...options, numBlocksOverride: 40 }, undefined, kvLayerGroups(config));
    expect(plan.pools.map((p) => p.numBlocks)).toEqual([40, slidingBlocks]);
    expect(plan.maxModelLen).toBe(160);
    // A byte budget: the sliding pool holds the windows of as many 64-token sequences as the budget
    // holds in both pools (16 full blocks + 4 window blocks of 3 layers each; at most max-num-seqs),
    // the full pool the rest.
    const layerBlockBytes = 2 * BS * config.numKvHeads * config.headDim * 4;
    const withBudget = (blocks: number) => planKvCache(model, { ...options, maxModelLen: 64, kvCacheMemoryBytes: blocks * layerBlockBytes }, undefined, kvLayerGroups(config));
    expect(withBudget(200).pools.map((p) => p.numBlocks)).toEqual([200 - 3 * slidingBlocks, slidingBlocks]);
    expect(withBudget(200).totalBytes).toBe(200 * layerBlockBytes);
    expect(withBudget(100).pools.map((p) => p.numBlocks)).toEqual([100 - 3 * (3 * 4 + 4), 3 * 4 + 4]);
    // Every layer sliding: one windowed pool, and no bound on max_model_len from it.
    const allSliding = { ...model, config: { ...config, layerTypes: undefined } };
    const windowed = planKvCache(allSliding, { ...options, kvCacheMemoryBytes: 10_000 * layerBlockBytes }, undefined, kvLayerGroups(allSliding.config));
    expect(windowed.pools).toEqual([{ window: WINDOW, layers: [0, 1, 2, 3], numBlocks: slidingBlocks }]);
    expect(windowed.maxModelLen).toBe(config.maxPositionEmbeddings);
  });

  describe.each(BACKENDS)('runner ($name)', ({ name, opts }) => {
    let single: ModelRunner;
    let split: ModelRunner;
    beforeAll(async () => {
      const base = { blockSize: BS, numBlocks: 32, device: 'cpu' as const, intraOpThreads: 1, ...opts };
      single = await createRunner(model, base);
      split = await createRunner(model, { ...base, kvPools: pools(32, 6) });
    });
    afterAll(async () => {
      await single.dispose();
      await split.dispose();
    });

    it('gives the logits of one pool for every layer, and of the windowed float64 reference', async () => {
      expect((split as SegmentedRunner).backendName).toBe(name);
      expect(split.kvPools?.map((p) => p.numBlocks)).toEqual([32, 6]);
      const tokens = tokensOf(29, 1);
      // Tables from the engine's own accounting: the sliding table releases (and reuses) blocks behind the window.
      const kv = new HybridKvCacheManager(
        split.kvPools!.map((p) => ({ numBlocks: p.numBlocks, window: p.window, numLayers: p.layers.length })),
        BS,
        false,
      );
      const seq = new Sequence('s', 's', 0, tokens, tokens.length, 0, null, false);
      const want = referenceForward(config, model.weights!, tokens);
      const vocab = config.vocabSize;
      for (let at = 0, chunk = 7; at < tokens.length; at += chunk, chunk = chunk > 1 ? chunk - 3 : 1) {
        const n = Math.min(chunk, tokens.length - at);
        expect(kv.allocate(seq, at, n)).toBe(true);
        const [fullTable, slidingTable] = kv.blockTables('s');
        const piece = tokens.slice(at, at + n);
        const a = await single.step([{ tokens: piece, positionOffset: at, blockTable: fullTable, allLogits: true }]);
        const rowsOfSingle = a.allLogits[0]!.slice();
        const b = await split.step([{ tokens: piece, positionOffset: at, blockTable: fullTable, blockTables: [fullTable, slidingTable], allLogits: true }]);
        expect(b.allLogits[0]!).toEqual(rowsOfSingle);
        for (let i = 0; i < n; i++) {
          const row = rowsOfSingle.subarray(i * vocab, (i + 1) * vocab);
          expect(maxAbsDiff(row, want[at + i]) / Math.max(...want[at + i].map(Math.abs))).toBeLessThan(1e-4);
        }
      }
      // The sliding pool of 6 blocks served 8 logical blocks: those behind the window went back.
      expect(kv.blockTables('s')[1].filter((id) => id === RELEASED).length).toBeGreaterThan(0);
    });
  });

  describe('engine', () => {
    const coreConfig = { maxModelLen: 256, maxNumSeqs: 4, maxNumBatchedTokens: 16, schedulingPolicy: 'fcfs' as const, enablePrefixCaching: true };
    const processors = () => new CompletionProcessorFactory({ vocabSize: config.vocabSize, eosTokenIds: [], maxModelLen: 256, tokenizer: null });

    /** Runs the requests together (aborting `abortId` after `abortAfter` steps); returns each one's tokens and what the run saw. */
    async function serve(runner: ModelRunner, requests: EngineRequest[], abortId: string | null = null, abortAfter = 0) {
      const outputs: RequestOutput[] = [];
      const iterations: IterationStats[] = [];
      const core = new EngineCore(runner, coreConfig, processors(), { onStep: (outs, _stats, it) => (outputs.push(...outs), iterations.push(it)) });
      let preemptions = 0;
      const schedule = core.scheduler.schedule.bind(core.scheduler);
      core.scheduler.schedule = () => {
        const plan = schedule();
        preemptions += plan.preempted.length;
        return plan;
      };
      const held: number[][] = [];
      for (const r of requests) core.addRequest(r);
      for (let steps = 0; core.hasWork(); steps++) {
        if (steps === abortAfter && abortId) core.abort([abortId]);
        await core.step();
        if (core.kv instanceof HybridKvCacheManager) held.push(core.kv.pools.map((p) => p.numBlocks - p.numFreeBlocks));
      }
      const tokens = new Map(outputs.filter((o) => o.finished).map((o) => [o.requestId, o.outputs[0].tokenIds]));
      const completions = new Map(outputs.filter((o) => o.finished).map((o) => [o.requestId, o.outputs.map((c) => c.tokenIds)]));
      return { tokens, completions, preemptions, held, iterations, usage: core.stats().kvCacheUsage };
    }

    let single: ModelRunner;
    let split: ModelRunner;
    beforeAll(async () => {
      const base = { blockSize: BS, device: 'cpu' as const, intraOpThreads: 1 };
      single = await createRunner(model, { ...base, numBlocks: 256 });
      // 24 full blocks hold 96 tokens: four sequences of up to 60 tokens must preempt.
      split = await createRunner(model, { ...base, numBlocks: 24, kvPools: pools(24, 24) });
    });
    afterAll(async () => {
      await single.dispose();
      await split.dispose();
    });

    it('generates what one pool generates, through mixed batches, preemption and an abort, holding only the window', async () => {
      const make = () => [14, 22, 9, 30, 17].map((n, i) => request(tokensOf(n, i + 2), { max_tokens: 30 }, { requestId: `r${i}` }));
      const want = await serve(single, make());
      const got = await serve(split, make(), 'r3', 6);
      expect(got.preemptions).toBeGreaterThan(0);
      for (const id of ['r0', 'r1', 'r2', 'r4']) expect(got.tokens.get(id)).toEqual(want.tokens.get(id));
      expect(got.tokens.get('r3')!.length).toBeLessThan(30);
      // The sliding pool never held more than the running sequences' windows and step chunks; the full pool grew with the sequences.
      const peak = (p: number) => Math.max(...got.held.map((h) => h[p]));
      expect(peak(1)).toBeLessThanOrEqual(coreConfig.maxNumSeqs * windowBlocksPerSequence(WINDOW, BS, 1) + coreConfig.maxNumBatchedTokens / BS);
      expect(peak(1)).toBeLessThan(peak(0));
      expect(got.held.at(-1)).toEqual([0, 0]);
      expect(got.usage).toBe(0);
    });

    it('refuses --kv-transfer-config: blocks of several pools are not moved between replicas', () => {
      const kvTransfer = normalizeKvTransferConfig({ kv_connector: 'TcpConnector', kv_role: 'kv_both' }, ['TcpConnector'], {});
      expect(() => new EngineCore(split, { ...coreConfig, kvTransfer }, processors(), { onStep: () => undefined })).toThrow(
        '--kv-transfer-config: llama cannot transfer KV: its KV cache has several pools (sliding-window layers)',
      );
      expect(() => new EngineCore(single, { ...coreConfig, kvTransfer }, processors(), { onStep: () => undefined })).not.toThrow();
    });

    it('n > 1 completions share the prompt in both pools (each pool copies its partial block) and sample the same tokens', async () => {
      // 13 prompt tokens: a partial last block in each pool, copied for each child.
      const make = () => [request(tokensOf(13, 7), { n: 3, temperature: 20, seed: 5, max_tokens: 20 }, { requestId: 'n3' })];
      const want = await serve(single, make());
      const copies: number[] = [];
      const copy = split.copyBlocks.bind(split);
      split.copyBlocks = (pairs) => {
        copies.push(...pairs.map(([, , pool]) => pool ?? 0));
        copy(pairs);
      };
      const got = await serve(split, make()).finally(() => (split.copyBlocks = copy));
      expect(copies.sort()).toEqual([0, 0, 1, 1]);
      expect(got.completions.get('n3')).toHaveLength(3);
      expect(got.completions.get('n3')).toEqual(want.completions.get('n3'));
      expect(new Set(got.completions.get('n3')!.map((t) => t.join())).size).toBeGreaterThan(1);
      expect(got.held.at(-1)).toEqual([0, 0]);
    });

    it('serves prefix hits whose window is cached, with the same tokens', async () => {
      const shared = tokensOf(26, 9);
      const make = () => [
        request(shared, { max_tokens: 6 }, { requestId: 'first' }),
        request([...shared.slice(0, 24), 5, 6, 7], { max_tokens: 6 }, { requestId: 'long-prefix' }),
        request([...shared.slice(0, 8), 99], { max_tokens: 6 }, { requestId: 'short-prefix' }),
      ];
      const want = new Map<string, number[]>();
      const got = new Map<string, number[]>();
      const cached: number[] = [];
      const hits: number[] = [];
      for (const r of make()) for (const [id, t] of (await serve(single, [r])).tokens) want.set(id, t);
      // One core for the three, so the prefix cache carries over.
      const core = new EngineCore(split, coreConfig, processors(), {
        onStep: (outs, _s, it) => {
          for (const o of outs) if (o.finished) got.set(o.requestId, o.outputs[0].tokenIds);
          cached.push(it.promptTokensCached);
        },
      });
      for (const r of make()) {
        cached.length = 0;
        core.addRequest(r);
        while (core.hasWork()) await core.step();
        hits.push(sum(cached));
      }
      // 24 shared tokens: position 24's window (19..24) needs blocks 4-5, cached; blocks 0-3 are not needed.
      // 8 shared tokens: position 8's window needs blocks 0-1, released by `first` but still cached.
      expect(hits).toEqual([0, 24, 8]);
      expect(got).toEqual(want);
    });

    it('serves a sequence longer than its pool when every layer slides (the engine as the server starts it, and after a wake-up)', async () => {
      const mistralLike = { ...model, config: { ...config, layerTypes: undefined } };
      const prompt = tokensOf(30, 4);
      const engine = await createInProcessEngine(mistralLike, engineOptions({ blockSize: BS, maxModelLen: 200, maxNumSeqs: 4, maxNumBatchedTokens: 16 }));
      try {
        const out = await finalOutput(engine, request(prompt, { max_tokens: 150 }));
        // 20 blocks (80 tokens) hold 4 sequences' windows: 180 tokens pass through them.
        expect(engine.stats().numBlocks).toBe(4 * (windowBlocksPerSequence(WINDOW, BS, 1) + 1) + 16 / BS);
        const plain = await createRunner(mistralLike, { blockSize: BS, numBlocks: 64, device: 'cpu', intraOpThreads: 1 });
        try {
          const want = await serve(plain, [request(prompt, { max_tokens: 150 }, { requestId: 'plain' })]);
          expect(out.outputs[0].tokenIds).toEqual(want.tokens.get('plain'));
          // Asleep and awake again: the new runner gets the same pools.
          await engine.sleep(1, 'abort');
          await engine.wakeUp();
          expect((await finalOutput(engine, request(prompt, { max_tokens: 150 }))).outputs[0].tokenIds).toEqual(want.tokens.get('plain'));
        } finally {
          await plain.dispose();
        }
      } finally {
        await engine.shutdown();
      }
    });
  });
});

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
