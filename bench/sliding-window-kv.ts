// `node dist/bench/sliding-window-kv.js [--decode] [--batches 1,4] [--steps 12] [--intermediate 1152] [--threads 1]`:
// KV memory of a gemma3-1B-shaped model (26 layers, 5 sliding : 1 full, window 512, 1 KV head x
// 256) at 8k context, with the sliding layers in a pool of their own against one pool of full
// attention: bytes of the arrays the code allocates (the KV plan's pools in a PagedKvCache), and how
// many 8k sequences a KV budget holds. With --decode, decode tok/s at 8k context of that attention
// shape (hidden 1152, Q8_0 linears, a reduced MLP) for full attention, the window in the kernel over
// one pool, and the window with its own pool.
import { planKvCache } from '../src/engine/core/kv-plan';
import { HybridKvCacheManager } from '../src/engine/core/hybrid-kv-cache';
import { Sequence } from '../src/engine/core/sequence';
import type { EngineOptions } from '../src/engine/types';
import { createRunner } from '../src/model/runner';
import { PagedKvCache } from '../src/model/runner/kv-cache';
import { kvLayerGroups, singleKvGroup, type KvPool } from '../src/model/runner/kv-pools';
import type { KvStorageDtype } from '../src/model/runner/kv-dtype';
import type { DecoderArchConfig, LoadedModel, ModelRunner, StepSequence } from '../src/model/types';
import { llamaConfig, quantizedQ8, randomModel } from './random-llama';
import { median, touchKvCache } from './runner-ceiling';

const CONTEXT = 8192;
const BLOCK = 16;
const WINDOW = 512;
const MIB = 2 ** 20;

/** gemma3-1B's attention: every sixth layer global, the others local with a 512 window. */
function gemma3Shape(overrides: Partial<DecoderArchConfig> = {}): DecoderArchConfig {
  return llamaConfig({
    numLayers: 26,
    hiddenSize: 1152,
    intermediateSize: 6912,
    numHeads: 4,
    numKvHeads: 1,
    headDim: 256,
    vocabSize: 262144,
    maxPositionEmbeddings: 32768,
    slidingWindow: WINDOW,
    layerTypes: Array.from({ length: 26 }, (_, l) => ((l + 1) % 6 === 0 ? 'full_attention' : 'sliding_attention')),
    ...overrides,
  });
}

function shapeOnly(config: DecoderArchConfig): LoadedModel {
  return { ...randomModel(llamaConfig({ numLayers: 1, vocabSize: 8 })), config, weights: null, contextLength: config.maxPositionEmbeddings };
}

function options(overrides: Partial<EngineOptions>): EngineOptions {
  return {
    load: { model: 'shape', loadFormat: 'auto', loadWeights: false, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' },
    modelName: 'shape',
    maxModelLen: CONTEXT,
    maxNumSeqs: 1,
    maxNumBatchedTokens: 2048,
    schedulingPolicy: 'fcfs',
    kvCacheMemoryBytes: null,
    blockSize: BLOCK,
    enablePrefixCaching: true,
    device: 'cpu',
    intraOpThreads: null,
    useWorker: false,
    ...overrides,
  };
}

const NO_MEMORY = { freeBytes: 0, totalBytes: 0, usedBytes: 0 };

/** Bytes of a PagedKvCache with these pools (what the runner allocates). */
function allocatedBytes(config: DecoderArchConfig, pools: KvPool[], dtype: KvStorageDtype): number {
  const cache = new PagedKvCache(config, BLOCK, pools[0].numBlocks, dtype, pools);
  return [...cache.keys, ...cache.values].reduce((n, a) => n + a.byteLength, 0);
}

function memory(dtype: KvStorageDtype): string[] {
  const config = gemma3Shape();
  const model = shapeOnly(config);
  const opts = { ...options({ numBlocksOverride: CONTEXT / BLOCK }), kvCacheDtype: dtype };
  const full = planKvCache(model, opts, NO_MEMORY, singleKvGroup(config));
  const pooled = planKvCache(model, opts, NO_MEMORY, kvLayerGroups(config));
  const fullBytes = allocatedBytes(config, full.pools, dtype);
  const pooledBytes = allocatedBytes(config, pooled.pools, dtype);
  // What one decoding sequence holds: its whole table in the full pool, its window in the sliding one.
  const kv = new HybridKvCacheManager(pooled.pools.map((p) => ({ numBlocks: p.numBlocks, window: p.window, numLayers: p.layers.length })), BLOCK, false);
  const seq = new Sequence('s', 's', 0, new Array<number>(CONTEXT).fill(1), CONTEXT, 0, null, false);
  for (let at = 0; at < CONTEXT; at += 2048) kv.allocate(seq, at, Math.min(2048, CONTEXT - at));
  kv.allocate(seq, CONTEXT - 1, 1);
  const heldBytes = kv.pools.reduce((n, pool, p) => n + (pool.numBlocks - pool.numFreeBlocks) * pooled.pools[p].layers.length * 2 * BLOCK * config.headDim * config.numKvHeads * (dtype === 'float32' ? 4 : 2), 0);
  const rows = [
    `KV cache, ${dtype}, one sequence of ${CONTEXT} tokens (block ${BLOCK}, max-num-batched-tokens 2048):`,
    `  full attention, one pool      ${full.pools.map((p) => p.numBlocks).join(' + ')} blocks   allocated ${(fullBytes / MIB).toFixed(1)} MiB   ${(fullBytes / CONTEXT / 1024).toFixed(2)} KiB/token`,
    `  sliding pool + full pool      ${pooled.pools.map((p) => `${p.numBlocks} (${p.layers.length} layers${p.window ? `, window ${p.window}` : ''})`).join(' + ')} blocks   allocated ${(pooledBytes / MIB).toFixed(1)} MiB   ${(pooledBytes / CONTEXT / 1024).toFixed(2)} KiB/token`,
    `  held by the decoding sequence ${(heldBytes / MIB).toFixed(1)} MiB   ${(heldBytes / CONTEXT / 1024).toFixed(2)} KiB/token (sliding pool's rest: room for a 2048-token prefill chunk)`,
  ];
  for (const gib of [4, 16]) {
    const budget = { ...options({ maxNumSeqs: 256, kvCacheMemoryBytes: gib * 2 ** 30 }), kvCacheDtype: dtype };
    const a = planKvCache(model, budget, NO_MEMORY, singleKvGroup(config));
    const b = planKvCache(model, budget, NO_MEMORY, kvLayerGroups(config));
    // A sequence decoding at 8k holds 512 blocks of pool 0 and 33 of the sliding pool; the sliding pool keeps 128 for a prefill chunk.
    const windows = Math.floor((b.pools[1].numBlocks - 2048 / BLOCK) / (WINDOW / BLOCK + 1));
    const held = Math.min(256, Math.floor(b.numBlocks / (CONTEXT / BLOCK)), windows);
    rows.push(`  ${gib} GiB budget, max-num-seqs 256: 8k sequences held: full attention ${Math.floor(a.numBlocks / (CONTEXT / BLOCK))}, pools ${held} (pool 0 ${b.pools[0].numBlocks} blocks, sliding pool ${b.pools[1].numBlocks})`);
  }
  return rows;
}

async function decode(batches: number[], steps: number, intermediate: number, threads: number): Promise<string[]> {
  const shape = { hiddenSize: 1152, intermediateSize: intermediate, vocabSize: 2048, tieWordEmbeddings: false };
  const windowed = quantizedQ8(randomModel(gemma3Shape(shape), 5));
  const full = { ...windowed, config: { ...windowed.config, slidingWindow: undefined, layerTypes: undefined } };
  const maxBatch = Math.max(...batches);
  const blocksPerSeq = CONTEXT / BLOCK + 1;
  const pools: KvPool[] = kvLayerGroups(windowed.config).map((g, i) => ({ ...g, numBlocks: i === 0 ? maxBatch * blocksPerSeq : maxBatch * (WINDOW / BLOCK + 2) }));
  const variants: Array<{ name: string; model: LoadedModel; pools?: KvPool[] }> = [
    { name: 'full attention', model: full },
    { name: 'window, one pool', model: windowed },
    { name: 'window, own pool', model: windowed, pools },
  ];
  const rows = [`decode at ${CONTEXT} tokens of context, gemma3-1B attention (hidden 1152, intermediate ${intermediate}, Q8_0), bfloat16 KV, ${threads} thread(s):`, '  variant              batch   tok/s   CPU ms/step   KV MiB'];
  for (const v of variants) {
    const runner = await createRunner(v.model, { blockSize: BLOCK, numBlocks: maxBatch * blocksPerSeq, device: 'cpu', intraOpThreads: threads, kvCacheDtype: 'bfloat16', ...(v.pools ? { kvPools: v.pools } : {}) });
    touchKvCache(runner);
    const kvMiB = kvArrays(runner) / MIB;
    try {
      for (const batch of batches) {
        const seqs = Array.from({ length: batch }, (_, s) => stepOf(s, blocksPerSeq, v.pools));
        await runner.step(seqs);
        const times: number[] = [];
        const cpu0 = process.cpuUsage();
        for (let i = 0; i < steps; i++) {
          const t = performance.now();
          await runner.step(seqs);
          times.push(performance.now() - t);
        }
        const cpu = process.cpuUsage(cpu0);
        const ms = median(times);
        rows.push(`  ${v.name.padEnd(20)} ${String(batch).padStart(5)} ${((1000 * batch) / ms).toFixed(1).padStart(7)} ${((cpu.user + cpu.system) / 1000 / steps).toFixed(1).padStart(13)} ${kvMiB.toFixed(0).padStart(8)}`);
      }
    } finally {
      await runner.dispose();
    }
  }
  return rows;
}

/** Sequence s decoding at CONTEXT: its blocks in pool 0, and in the sliding pool only the window's (the rest released). */
function stepOf(s: number, blocksPerSeq: number, pools: KvPool[] | undefined): StepSequence {
  const blockTable = Array.from({ length: blocksPerSeq }, (_, i) => s * blocksPerSeq + i);
  if (!pools) return { tokens: [s + 2], positionOffset: CONTEXT, blockTable };
  const perSeq = WINDOW / BLOCK + 2;
  const first = Math.floor((CONTEXT - WINDOW + 1) / BLOCK);
  const sliding = blockTable.map((_, i) => (i < first ? -1 : s * perSeq + (i - first)));
  return { tokens: [s + 2], positionOffset: CONTEXT, blockTable, blockTables: [blockTable, sliding] };
}

function kvArrays(runner: ModelRunner): number {
  const cache = (runner as unknown as { cache: PagedKvCache }).cache;
  return [...cache.keys, ...cache.values].reduce((n, a) => n + a.byteLength, 0);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const get = (flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
  for (const dtype of ['bfloat16', 'float32'] as const) console.log(memory(dtype).join('\n'));
  if (!argv.includes('--decode')) return;
  const batches = (get('--batches') ?? '1,4').split(',').map(Number);
  console.log((await decode(batches, Number(get('--steps') ?? 12), Number(get('--intermediate') ?? 1152), Number(get('--threads') ?? 1))).join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
