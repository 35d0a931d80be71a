// `npm run bench:structured` (after npm run build): what structured outputs cost, on the engine
// as the server runs it (core in its worker thread, grammars in theirs; no HTTP), for stories260K and the ~100M
// random Llama (vocab 32000, written to .bench-cache/ on first use):
//   1. decode tokens/s at batch 1 and 32, unconstrained vs a JSON-schema constraint (seeded
//      sampling; the schema's string has a minLength so every sequence runs to max_tokens);
//   2. grammar compile time p50 / p99 over 20 different schemas (the model's vocabulary);
//   3. grammar cache hit rate of a workload drawing 100 requests from those 20 schemas;
//   4. what a cache-miss compile costs running neighbours: the longest gap between decode steps
//      of 8 unconstrained streams alone, beside 20 constrained requests whose schemas are cached,
//      and beside 20 whose schemas must compile (the grammar worker's thread compiles them).
// Throughput figures are the median of 3 interleaved runs (the machine may be shared).
// Knobs: BENCH_MODELS=stories,100m  BENCH_MAX_TOKENS (default 64 stories / 24 100m).

import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createEngine } from '../src/engine';
import { defaultSamplingParams } from '../src/engine/sampling-params';
import { StructuredOutputCompiler } from '../src/engine/structured/grammar-compiler';
import { resolveConstraint } from '../src/engine/structured/grammar-spec';
import type { EngineClient, EngineOptions, EngineRequest, IterationStats, SamplingParams } from '../src/engine/types';
import { loadModel } from '../src/model/load-model';
import type { LoadedModel } from '../src/model/types';
import { ensureBenchModel } from './random-model';

const repoRoot = resolve(__dirname, '..', '..');
const modelsDir = resolve(repoRoot, '..', 'shared', 'models');
const cacheDir = join(repoRoot, '.bench-cache');

const PROMPT = 'Once upon a time, there was a little girl named Lily. She loved to play outside.';

/** A JSON schema whose one string must be long: the constrained run never ends before max_tokens. */
const LONG_STORY_SCHEMA = {
  type: 'object',
  properties: { title: { type: 'string', maxLength: 12 }, story: { type: 'string', minLength: 2000 } },
  required: ['title', 'story'],
};

/** Twenty different schemas (different property sets, types and bounds). */
function schemas(): Record<string, unknown>[] {
  const types = [{ type: 'string', maxLength: 16 }, { type: 'integer', minimum: 0 }, { type: 'boolean' }, { enum: ['a', 'b', 'c'] }, { type: 'array', items: { type: 'number' }, maxItems: 4 }];
  return Array.from({ length: 20 }, (_, i) => {
    const properties: Record<string, unknown> = {};
    for (let p = 0; p < 3 + (i % 5); p++) properties[`field_${i}_${p}`] = types[(i + p) % types.length];
    if (i % 4 === 0) properties.nested = { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' } }, required: ['id'] };
    return { type: 'object', properties, required: Object.keys(properties).slice(0, 2) };
  });
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
const fmt = (n: number, digits = 1) => n.toFixed(digits);

function engineOptions(path: string): EngineOptions {
  return {
    load: { model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto' },
    modelName: 'bench',
    maxModelLen: 512,
    maxNumSeqs: 64,
    maxNumBatchedTokens: 2048,
    schedulingPolicy: 'fcfs',
    kvCacheMemoryBytes: null,
    blockSize: 16,
    enablePrefixCaching: true,
    device: 'cpu',
    intraOpThreads: null,
    useWorker: true,
  };
}

let counter = 0;
function request(model: LoadedModel, p: Partial<SamplingParams>): EngineRequest {
  return {
    requestId: `bench-${counter++}`,
    promptTokenIds: model.tokenizer!.encode(PROMPT, { addSpecialTokens: true }),
    params: { ...defaultSamplingParams(), temperature: 1, output_kind: 1, ...p },
  };
}

/** Runs `batch` requests at once; decode tokens/s = tokens after each first token / time after the last first token. */
async function decodeRate(engine: EngineClient, model: LoadedModel, batch: number, maxTokens: number, constrained: boolean): Promise<number> {
  const firsts: number[] = [];
  let tokens = 0;
  const run = async (i: number) => {
    const so = constrained ? { json: LONG_STORY_SCHEMA, disable_any_whitespace: true } : null;
    let first = true;
    for await (const out of engine.generate(request(model, { seed: i, max_tokens: maxTokens, ignore_eos: true, structured_outputs: so }))) {
      const n = out.outputs.reduce((sum, o) => sum + o.tokenIds.length, 0);
      if (first && n > 0) {
        firsts.push(performance.now());
        first = false;
        tokens += n - 1;
      } else {
        tokens += n;
      }
    }
  };
  await Promise.all(Array.from({ length: batch }, (_, i) => run(i)));
  const end = performance.now();
  return tokens / ((end - Math.max(...firsts)) / 1000);
}

async function compileTimes(model: LoadedModel): Promise<number[]> {
  const compiler = await StructuredOutputCompiler.create(model.tokenizer!, model.config.vocabSize, model.eosTokenIds);
  const out: number[] = [];
  for (const schema of schemas()) {
    const spec = resolveConstraint({ json: schema });
    const t = performance.now();
    compiler.compile(spec);
    out.push(performance.now() - t);
  }
  return out;
}

/** Hit rate of 100 requests drawing from the 20 schemas (every schema at least once), through the engine. */
async function cacheHitRate(engine: EngineClient, model: LoadedModel): Promise<{ hits: number; queries: number }> {
  const all = schemas().map((s) => ({ ...s, title: 'hit-rate run' }));
  let hits = 0;
  let misses = 0;
  const off = engine.onIteration((s: IterationStats) => {
    hits += s.grammarCacheHits ?? 0;
    misses += s.grammarCacheMisses ?? 0;
  });
  const picks = Array.from({ length: 100 }, (_, i) => (i < 20 ? i : (i * 7919) % 20));
  for (let i = 0; i < picks.length; i += 20) {
    await Promise.all(
      picks.slice(i, i + 20).map(async (k) => {
        for await (const _ of engine.generate(request(model, { seed: k, max_tokens: 2, structured_outputs: { json: all[k], disable_any_whitespace: true } }))) void _;
      }),
    );
  }
  off();
  return { hits, queries: hits + misses };
}

/** Longest gap (ms) between decode steps of 8 unconstrained streams, while `during` runs beside them. */
async function longestStepGap(engine: EngineClient, model: LoadedModel, maxTokens: number, during: () => Promise<void>): Promise<number> {
  const stamps: number[] = [];
  const off = engine.onIteration((s) => {
    if (s.generationTokens > 0) stamps.push(performance.now());
  });
  const streams = Array.from({ length: 8 }, (_, i) => (async () => {
    for await (const _ of engine.generate(request(model, { seed: i, max_tokens: maxTokens, ignore_eos: true }))) void _;
  })());
  await new Promise((r) => setTimeout(r, 50));
  await during();
  await Promise.all(streams);
  off();
  let gap = 0;
  for (let i = 1; i < stamps.length; i++) gap = Math.max(gap, stamps[i] - stamps[i - 1]);
  return gap;
}

async function benchModel(label: string, path: string, maxTokens: number): Promise<void> {
  console.log(`\n=== ${label} (${path}), max_tokens ${maxTokens}, temperature 1, seeded`);
  const model = await loadModel({ model: path, loadFormat: 'auto', loadWeights: false, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto' });
  const engine = await createEngine(engineOptions(path));
  try {
    await decodeRate(engine, model, 2, 4, true); // warm-up: runner, xgrammar, the schema's compile
    console.log('batch | unconstrained tok/s | JSON-schema tok/s | ratio');
    for (const batch of [1, 32]) {
      const plain: number[] = [];
      const constrained: number[] = [];
      for (let rep = 0; rep < 3; rep++) {
        plain.push(await decodeRate(engine, model, batch, maxTokens, false));
        constrained.push(await decodeRate(engine, model, batch, maxTokens, true));
      }
      const [p, c] = [quantile(plain, 0.5), quantile(constrained, 0.5)];
      console.log(`${String(batch).padStart(5)} | ${fmt(p).padStart(19)} | ${fmt(c).padStart(17)} | ${fmt(c / p, 2)}`);
    }
    const times = await compileTimes(model);
    console.log(`grammar compile (20 schemas, vocab ${model.config.vocabSize}): p50 ${fmt(quantile(times, 0.5))} ms, p99 ${fmt(quantile(times, 0.99))} ms`);
    const { hits, queries } = await cacheHitRate(engine, model);
    console.log(`grammar cache: ${hits} hits / ${queries} lookups = ${fmt((100 * hits) / queries)}% (100 requests over 20 schemas)`);
    const twenty = (tag: string) => schemas().map((schema) => ({ ...schema, title: tag }));
    const constrainedBeside = (set: Record<string, unknown>[]) => async () => {
      await Promise.all(
        set.map(async (schema, k) => {
          for await (const _ of engine.generate(request(model, { seed: k, max_tokens: 1, structured_outputs: { json: schema } }))) void _;
        }),
      );
    };
    const cached = twenty('cached');
    await constrainedBeside(cached)(); // compiles them once
    const quiet = await longestStepGap(engine, model, maxTokens * 2, () => Promise.resolve());
    const besideHits = await longestStepGap(engine, model, maxTokens * 2, constrainedBeside(cached));
    const misses = await longestStepGap(engine, model, maxTokens * 2, constrainedBeside(twenty(`fresh ${counter}`)));
    console.log(
      `longest gap between decode steps of 8 streams: ${fmt(quiet)} ms alone, ${fmt(besideHits)} ms beside 20 constrained requests ` +
        `(cached schemas), ${fmt(misses)} ms beside 20 whose schemas compile`,
    );
  } finally {
    await engine.shutdown();
  }
}

async function main(): Promise<void> {
  const storiesPath = join(modelsDir, 'stories260K.gguf');
  if (!existsSync(storiesPath)) throw new Error(`missing ${storiesPath}: the benchmark needs ../shared/models`);
  const wanted = (process.env.BENCH_MODELS ?? 'stories,100m').split(',');
  const maxTokens = process.env.BENCH_MAX_TOKENS ? Number(process.env.BENCH_MAX_TOKENS) : null;
  if (wanted.includes('stories')) await benchModel('stories260K (F32, vocab 512)', storiesPath, maxTokens ?? 64);
  if (wanted.includes('100m')) {
    const path = await ensureBenchModel(join(cacheDir, 'bench-100m-q8_0.gguf'), storiesPath);
    await benchModel('random llama ~100M (Q8_0, vocab 32000)', path, maxTokens ?? 24);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
