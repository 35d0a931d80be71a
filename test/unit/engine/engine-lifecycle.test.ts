/** @jest-environment ./test/helpers/ort-environment.js */
// Abort / disconnect, validation, failure isolation, stop strings and the worker thread.

import { createEngine, createInProcessEngine } from '../../../src/engine';
import { CompletionProcessorFactory, type CompletionProcessor } from '../../../src/engine/core/completion-processor';
import { EngineCore } from '../../../src/engine/core/engine-core';
import { EngineDeadError } from '../../../src/engine/errors';
import { createRunner } from '../../../src/model/runner';
import type { EngineClient, EngineRequest, RequestOutput } from '../../../src/engine/types';
import type { LoadedModel, ModelRunner } from '../../../src/model/types';
import { collect, engineOptions, finalOutput, loadStories, prompts, request, STORIES } from './engine-fixtures';
import { needs } from '../../helpers/needs';
import { waitFor } from '../../helpers/wait';

const onStories = needs(STORIES);

onStories.describe('engine lifecycle on stories260K', () => {
  let model: LoadedModel;
  let engine: EngineClient;

  beforeAll(async () => {
    model = await loadStories();
    engine = await createInProcessEngine(model, engineOptions());
  });
  afterAll(async () => {
    await engine?.shutdown();
  });

  it('abort(), an AbortSignal and leaving the stream end requests at once and free all KV blocks', async () => {
    const ps = prompts(model, 3);
    const long = { max_tokens: 200, output_kind: 1 as const };
    const byAbort = request(ps[0], long);
    const bySignal = request(ps[1], long);
    const byBreak = request(ps[2], long);
    const controller = new AbortController();

    const abortedOutputs = (async () => {
      const outs: RequestOutput[] = [];
      for await (const out of engine.generate(byAbort)) {
        outs.push(out);
        if (outs.length === 3) engine.abort([byAbort.requestId]);
      }
      return outs;
    })();
    const signalled = (async () => {
      const outs: RequestOutput[] = [];
      for await (const out of engine.generate(bySignal, controller.signal)) {
        outs.push(out);
        if (outs.length === 3) controller.abort();
      }
      return outs;
    })();
    const broken = (async () => {
      let count = 0;
      for await (const out of engine.generate(byBreak)) {
        expect(out.finished).toBe(false);
        if (++count === 3) break;
      }
      return count;
    })();

    const [a, s, b] = await Promise.all([abortedOutputs, signalled, broken]);
    for (const outs of [a, s]) {
      const last = outs[outs.length - 1];
      expect(last.finished).toBe(true);
      expect(last.outputs[0].finishReason).toBe('abort');
      // Ended within a step or two, far from the 200 tokens asked for.
      expect(outs.flatMap((o) => o.outputs[0].tokenIds).length).toBeLessThan(8);
    }
    expect(b).toBe(3);
    await waitFor(() => engine.stats().numRunning === 0);
    expect(engine.stats().kvCacheUsage).toBe(0);
  });

  it('refuses requests that skipped the serving checks as internal errors, never queued', async () => {
    const p = prompts(model, 1)[0];
    const tooLong = Array.from({ length: 256 }, () => 300);
    const invariant = { name: 'EngineInvariantError' };
    await expect(collect(engine, request(tooLong))).rejects.toMatchObject(invariant);
    await expect(collect(engine, request(p, { max_tokens: 500 }))).rejects.toMatchObject(invariant);
    await expect(collect(engine, request(p, {}, { priority: 3 }))).rejects.toMatchObject(invariant);
    await expect(collect(engine, request([]))).rejects.toMatchObject(invariant);
    await expect(collect(engine, request([p[0], 999_999]))).rejects.toMatchObject(invariant);
    expect(engine.stats().numWaiting).toBe(0);
  });

  it('max_tokens null generates up to max_model_len', async () => {
    const p = prompts(model, 1)[0];
    const out = await finalOutput(engine, request(p, { max_tokens: null }));
    expect(out.outputs[0].tokenIds.length).toBe(256 - p.length);
    expect(out.outputs[0].finishReason).toBe('length');
  });

  it('stops on a stop string that spans two tokens, and never streams part of it', async () => {
    const p = prompts(model, 5)[4];
    const deltas = await collect(engine, request(p, { output_kind: 1, max_tokens: 20 }));
    const pieces = deltas.map((o) => o.outputs[0].text);
    const full = pieces.join('');
    // Last two characters of the 4th token's text + first character of the 5th.
    const boundary = pieces.slice(0, 4).join('').length;
    const stop = full.slice(boundary - 2, boundary + 1);
    expect(pieces[3].length).toBeGreaterThanOrEqual(2);
    const streamed = await collect(engine, request(p, { output_kind: 1, max_tokens: 20, stop: [stop] }));
    const text = streamed.map((o) => o.outputs[0].text).join('');
    const last = streamed[streamed.length - 1].outputs[0];
    expect(text).toBe(full.slice(0, full.indexOf(stop)));
    expect(last.finishReason).toBe('stop');
    expect(last.stopReason).toBe(stop);
  });

  it('streams multi-byte characters split over byte tokens only once complete', async () => {
    const tok = model.tokenizer!;
    const byteId = (hex: string) => {
      for (let id = 0; id < tok.vocabSize; id++) if (tok.idToToken(id) === `<0x${hex}>`) return id;
      throw new Error(`no byte token ${hex}`);
    };
    // "é" is C3 A9: with only these two tokens allowed, characters form across steps.
    const allowed = [byteId('C3'), byteId('A9')];
    const req = request(prompts(model, 1)[0], { output_kind: 1, max_tokens: 16, temperature: 1, seed: 3, allowed_token_ids: allowed });
    const deltas = await collect(engine, req);
    const ids = deltas.flatMap((o) => o.outputs[0].tokenIds);
    const bytes = Uint8Array.from(ids.map((id) => (id === allowed[0] ? 0xc3 : 0xa9)));
    expect(deltas.map((o) => o.outputs[0].text).join('')).toBe(new TextDecoder().decode(bytes));
    // Nothing sent is ever revised: a C3 ending a step is held back, not sent as U+FFFD.
    const final = deltas.map((o) => o.outputs[0].text).join('');
    let sent = '';
    for (const d of deltas) {
      sent += d.outputs[0].text;
      expect(final.startsWith(sent)).toBe(true);
    }
    expect(ids.filter((id) => id === allowed[0]).length).toBeGreaterThan(0);
  });
});

onStories.describe('failure isolation', () => {
  let model: LoadedModel;
  let runner: ModelRunner;
  beforeAll(async () => {
    model = await loadStories();
    runner = await createRunner(model, { blockSize: 16, numBlocks: 64, device: 'cpu', intraOpThreads: 1 });
  });
  afterAll(async () => {
    await runner?.dispose();
  });

  function makeCore(r: ModelRunner, factory: CompletionProcessorFactory) {
    const outputs: RequestOutput[] = [];
    const core = new EngineCore(
      r,
      { maxModelLen: 128, maxNumSeqs: 8, maxNumBatchedTokens: 64, schedulingPolicy: 'fcfs', enablePrefixCaching: true },
      factory,
      { onStep: (outs) => outputs.push(...outs) },
    );
    const run = async () => {
      while (core.hasWork()) await core.step();
    };
    return { core, outputs, run };
  }
  const ctx = () => ({ vocabSize: model.config.vocabSize, eosTokenIds: model.eosTokenIds, maxModelLen: 128, tokenizer: model.tokenizer });
  const finalOf = (outputs: RequestOutput[], req: EngineRequest) => outputs.filter((o) => o.requestId === req.requestId && o.finished)[0];

  it('a runner failure fails that step’s requests and the engine keeps serving', async () => {
    let failNext = false;
    const flaky: ModelRunner = Object.create(runner);
    flaky.step = async (batch) => {
      if (failNext) {
        failNext = false;
        throw new Error('simulated ORT failure');
      }
      return runner.step(batch);
    };
    const { core, outputs, run } = makeCore(flaky, new CompletionProcessorFactory(ctx()));
    const [p1, p2] = prompts(model, 2);
    const doomed = request(p1);
    core.addRequest(doomed);
    failNext = true;
    await run();
    const failed = finalOf(outputs, doomed);
    expect(failed.outputs[0].finishReason).toBe('error');
    expect(failed.error).toContain('simulated ORT failure');
    expect(core.stats().kvCacheUsage).toBe(0);
    const fine = request(p2);
    core.addRequest(fine);
    await run();
    expect(finalOf(outputs, fine).outputs[0].tokenIds).toHaveLength(12);
  });

  it('an abort that arrives while a step runs ends the request right after that step', async () => {
    const { core, outputs, run } = makeCore(runner, new CompletionProcessorFactory(ctx()));
    const [p1, p2] = prompts(model, 2);
    const victim = request(p1, { max_tokens: 50 });
    const other = request(p2);
    core.addRequest(victim);
    core.addRequest(other);
    await core.step();
    const stepping = core.step();
    core.abort([victim.requestId]);
    expect(core.stats().numRunning).toBe(2); // not yet: the step owns its blocks until it ends
    await stepping;
    const final = finalOf(outputs, victim);
    expect(final.outputs[0].finishReason).toBe('abort');
    expect(final.outputs[0].tokenIds.length).toBeLessThanOrEqual(2);
    expect(core.stats().numRunning).toBe(1);
    await run();
    expect(finalOf(outputs, other).outputs[0].tokenIds).toHaveLength(12);
    expect(core.stats().kvCacheUsage).toBe(0);
  });

  it('an exception in one request’s post-processing ends only that request', async () => {
    class FailingFactory extends CompletionProcessorFactory {
      create(req: EngineRequest, index: number, maxTokens: number): CompletionProcessor {
        const inner = super.create(req, index, maxTokens);
        if (req.params.seed !== 666) return inner;
        return {
          ...inner,
          appendToken: () => {
            throw new Error('detokenizer blew up');
          },
        };
      }
    }
    const { core, outputs, run } = makeCore(runner, new FailingFactory(ctx()));
    const [p1, p2] = prompts(model, 2);
    const bad = request(p1, { seed: 666 });
    const good = request(p2);
    core.addRequest(bad);
    core.addRequest(good);
    await run();
    expect(finalOf(outputs, bad).outputs[0].finishReason).toBe('error');
    expect(finalOf(outputs, bad).error).toContain('detokenizer blew up');
    expect(finalOf(outputs, good).outputs[0].finishReason).toBe('length');
    expect(finalOf(outputs, good).outputs[0].tokenIds).toHaveLength(12);
  });
});

onStories.describe('engine in a worker thread', () => {
  it('serves the same greedy outputs as in-process, reports health, and refuses work once shut down', async () => {
    const model = await loadStories();
    const ps = prompts(model, 4);
    const local = await createInProcessEngine(model, engineOptions());
    const expected = await Promise.all(ps.map((p) => finalOutput(local, request(p))));
    await local.shutdown();

    const worker = await createEngine(engineOptions({ useWorker: true }));
    expect(worker.health()).toEqual({ alive: true });
    expect(worker.tokenizer).not.toBeNull();
    const got = await Promise.all(ps.map((p) => finalOutput(worker, request(p))));
    expect(got.map((o) => o.outputs[0].tokenIds)).toEqual(expected.map((o) => o.outputs[0].tokenIds));
    expect(got.map((o) => o.outputs[0].text)).toEqual(expected.map((o) => o.outputs[0].text));
    await worker.shutdown();
    expect(worker.health().alive).toBe(false);
    await expect(collect(worker, request(ps[0]))).rejects.toThrow(EngineDeadError);
  });
});
