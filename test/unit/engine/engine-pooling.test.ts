/** @jest-environment ./test/helpers/ort-environment.js */
// The engine's encode path on a pooling model: requests go through the same scheduler and token
// budget as generation, many are packed into one forward, no KV is kept, and results equal the
// runner's single-sequence outputs whatever the packing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInProcessEngine } from '../../../src/engine';
import { EngineInvariantError, EngineSleepingError } from '../../../src/engine/errors';
import type { EngineClient, IterationStats } from '../../../src/engine/types';
import { loadModel } from '../../../src/model/load-model';
import { createPoolingRunner } from '../../../src/model/runner/pooling-runner';
import type { LoadedModel } from '../../../src/model/types';
import { writeEncoderDir } from '../../helpers/encoder-model';
import { loadOptions } from '../../helpers/model-files';
import { engineOptions, request } from './engine-fixtures';
import { normalizeKvTransferConfig } from '../../../src/engine/kv-transfer/kv-transfer-config';
import { normalizeSpeculativeConfig } from '../../../src/engine/speculative/speculative-config';

let tmp: string;
let model: LoadedModel;
const prompts = Array.from({ length: 24 }, (_, i) => [2, ...Array.from({ length: 1 + ((i * 5) % 23) }, (_, j) => 5 + ((i + j * 3) % 40)), 3]);

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'ortllm-pooling-engine-'));
  const written = writeEncoderDir(join(tmp, 'bert'), { family: 'bert', numLabels: null, hidden: 32, layers: 2, heads: 4, intermediate: 64, maxPositions: 64 }, 5, { pooling: 'mean', normalize: true });
  model = await loadModel(loadOptions(written.dir));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function withEngine<T>(overrides: Parameters<typeof engineOptions>[0], fn: (engine: EngineClient, steps: IterationStats[]) => Promise<T>): Promise<T> {
  const engine = await createInProcessEngine(model, engineOptions({ load: loadOptions(model.source), maxModelLen: null, ...overrides }));
  const steps: IterationStats[] = [];
  engine.onIteration((s) => steps.push(s));
  try {
    return await fn(engine, steps);
  } finally {
    await engine.shutdown();
  }
}

let id = 0;
const encodeRequest = (promptTokenIds: number[], extra = {}) => ({ requestId: `enc-${id++}`, promptTokenIds, ...extra });

describe('engine encode path', () => {
  it('packs concurrent requests into shared steps and returns what the runner gives each sequence alone', async () => {
    const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1 });
    const alone: Float32Array[] = [];
    for (const tokens of prompts) alone.push((await runner.encode([{ tokens }]))[0]);
    await runner.dispose();

    await withEngine({ maxNumBatchedTokens: 64 }, async (engine, steps) => {
      expect(engine.modelOutput).toEqual({ kind: 'pooled', pooling: 'MEAN' });
      const outputs = await Promise.all(prompts.map((p) => engine.encode(encodeRequest(p))));
      outputs.forEach((out, i) => {
        expect(out.promptTokenIds).toEqual(prompts[i]);
        Array.from(out.data).forEach((v, j) => expect(v).toBeCloseTo(alone[i][j], 4));
      });
      const finished = steps.flatMap((s) => s.finished);
      expect(finished).toHaveLength(prompts.length);
      expect(finished.every((f) => f.finishReason === 'stop' && f.generationTokens === 0)).toBe(true);
      // Several requests per forward, and never more tokens than the step budget (64 >= max_model_len 64).
      const perStep = steps.filter((s) => s.finished.length > 0);
      expect(Math.max(...perStep.map((s) => s.finished.length))).toBeGreaterThan(1);
      expect(Math.max(...perStep.map((s) => s.promptTokens))).toBeLessThanOrEqual(64);
      expect(steps.reduce((n, s) => n + s.promptTokens, 0)).toBe(prompts.reduce((n, p) => n + p.length, 0));
      expect(engine.stats()).toMatchObject({ numRunning: 0, numWaiting: 0, kvCacheUsage: 0 });
    });
  });

  it('refuses --enable-lora: adapters apply to generation models only', async () => {
    await expect(withEngine({ lora: { maxLoras: 1, maxRank: 8, maxCpuLoras: 1, dtype: 'auto' } }, async () => undefined)).rejects.toThrow(
      '--enable-lora: LoRA adapters apply to generation models; pooling models run without them here',
    );
  });

  it('refuses --speculative-config: speculation applies to generation models only', async () => {
    const speculative = normalizeSpeculativeConfig({ method: 'ngram', num_speculative_tokens: 2 });
    await expect(withEngine({ speculative }, async () => undefined)).rejects.toThrow(
      '--speculative-config: speculative decoding applies to generation models, not pooling models',
    );
  });

  it('refuses --kv-transfer-config: a pooling model keeps no KV to transfer', async () => {
    const kvTransfer = normalizeKvTransferConfig({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_port: 0 }, ['TcpConnector'], {});
    await expect(withEngine({ kvTransfer }, async () => undefined)).rejects.toThrow('--kv-transfer-config: KV transfer applies to generation models; pooling models keep no KV cache');
  });

  it('raises a step budget below max_model_len so that any request fits whole', async () => {
    await withEngine({ maxNumBatchedTokens: 8 }, async (engine, steps) => {
      const long = Array.from({ length: 40 }, (_, i) => 5 + (i % 40));
      const out = await engine.encode(encodeRequest(long));
      expect(out.data.length).toBe(32);
      expect(steps.find((s) => s.finished.length > 0)!.promptTokens).toBe(40);
    });
  });

  it('refuses, as an internal error, requests the serving layer should have stopped (too long, empty, out of vocabulary), and generation', async () => {
    await withEngine({ maxModelLen: 16 }, async (engine) => {
      await expect(engine.encode(encodeRequest(Array(17).fill(5)))).rejects.toThrow(/more tokens than max_model_len/);
      await expect(engine.encode(encodeRequest([]))).rejects.toBeInstanceOf(EngineInvariantError);
      await expect(engine.encode(encodeRequest([5, 9999]))).rejects.toThrow(/outside the vocabulary/);
      const stream = engine.generate(request([5, 6]));
      await expect((async () => { for await (const _ of stream) void _; })()).rejects.toThrow(/served for pooling/);
      expect((await engine.encode(encodeRequest([2, 5, 3]))).data.length).toBe(32);
    });
  });

  it('an aborted request rejects, counts as aborted, and leaves the others untouched', async () => {
    await withEngine({ maxNumBatchedTokens: 64, maxNumSeqs: 2 }, async (engine, steps) => {
      const controller = new AbortController();
      const pending = prompts.slice(0, 6).map((p, i) => engine.encode(encodeRequest(p), i === 5 ? controller.signal : undefined));
      controller.abort(new Error('client gone'));
      const results = await Promise.allSettled(pending);
      expect(results.slice(0, 5).every((r) => r.status === 'fulfilled')).toBe(true);
      expect(results[5]).toMatchObject({ status: 'rejected', reason: new Error('client gone') });
      await new Promise((r) => setTimeout(r, 20));
      expect(steps.flatMap((s) => s.finished).map((f) => f.finishReason).sort()).toEqual(['abort', 'stop', 'stop', 'stop', 'stop', 'stop']);
      expect(engine.stats()).toMatchObject({ numRunning: 0, numWaiting: 0 });
    });
  });

  it('sleeps (the pooling session is released; encode refuses) and wakes with the same outputs', async () => {
    await withEngine({}, async (engine) => {
      const before = await engine.encode(encodeRequest(prompts[3]));
      await engine.sleep(2, 'wait');
      await expect(engine.encode(encodeRequest(prompts[3]))).rejects.toBeInstanceOf(EngineSleepingError);
      await engine.wakeUp();
      const after = await engine.encode(encodeRequest(prompts[3]));
      Array.from(after.data).forEach((v, j) => expect(v).toBeCloseTo(before.data[j], 5));
    });
  });
});
