// EngineFrontend against a fake core connection (no model): routing of outputs,
// abort on disconnect, rejected requests, a dead core, the --max-num-queued-reqs bound and
// pausing a request whose consumer falls behind.

import { EngineFrontend } from '../../../src/engine/engine-frontend';
import { EngineDeadError, EngineInvariantError, RequestValidationError } from '../../../src/engine/errors';
import { BACKLOG_HIGH } from '../../../src/engine/output-stream';
import type { CoreConnection } from '../../../src/engine/core/protocol';
import { defaultSamplingParams } from '../../../src/engine/sampling-params';
import { OUTPUT_KIND, type EngineRequest, type RequestOutput } from '../../../src/engine/types';
import type { LoadedModel, ModelArchConfig } from '../../../src/model/types';

const config = { vocabSize: 100 } as ModelArchConfig;
const model = {
  source: 'fake',
  config,
  output: { kind: 'logits' },
  pooler: null,
  weights: null,
  onnxPath: null,
  tokenizer: null,
  chatTemplate: null,
  generationDefaults: {},
  eosTokenIds: [2],
  contextLength: 64,
} satisfies LoadedModel;

function setup(numBlocks = 8, maxNumQueuedReqs: number | null = null) {
  const added: EngineRequest[] = [];
  const aborted: string[][] = [];
  const flow: string[] = [];
  const connection: CoreConnection = {
    info: { numBlocks, blockSize: 4, maxModelLen: 32 },
    add: (r) => added.push(r),
    encode: () => undefined,
    abort: (ids) => aborted.push(ids),
    pause: (ids) => flow.push(`pause ${ids.join()}`),
    resume: (ids) => flow.push(`resume ${ids.join()}`),
    sleep: async () => undefined,
    wakeUp: async () => undefined,
    resetPrefixCache: async () => undefined,
    kvCachedBlocks: async () => ({ groups: [] }),
    loadLora: async () => undefined,
    unloadLora: async () => undefined,
    shutdown: async () => undefined,
  };
  const frontend = new EngineFrontend(model, { maxNumSeqs: 4, schedulingPolicy: 'fcfs', maxNumQueuedReqs }, connection.info);
  frontend.attach(connection);
  return { frontend, added, aborted, flow };
}

const req = (id: string, max_tokens = 4): EngineRequest => ({
  requestId: id,
  promptTokenIds: [1, 5, 6],
  params: { ...defaultSamplingParams(), max_tokens },
});

/** As a worker sends it: without the prompt ids, which the frontend puts back. */
function output(id: string, tokens: number[], finished: boolean): RequestOutput {
  return {
    requestId: id,
    promptTokenIds: [],
    promptLogprobs: null,
    outputs: [{ index: 0, text: '', tokenIds: tokens, cumulativeLogprob: null, logprobs: null, finishReason: finished ? 'length' : null, stopReason: null }],
    finished,
    numCachedTokens: 0,
  };
}

const stats = { numRunning: 1, numWaiting: 0, kvCacheUsage: 0.25, numBlocks: 8, blockSize: 4 };
const emptyIteration = { promptTokens: 0, generationTokens: 0, timeToFirstTokens: [], interTokenLatencies: [], finished: [], numPreemptions: 0, prefixCacheQueries: 0, prefixCacheHits: 0, promptTokensCached: 0, promptTokensRecomputed: 0 };

describe('EngineFrontend', () => {
  it('routes outputs to their request and ends the stream on the finished one', async () => {
    const { frontend, added, aborted } = setup();
    const it = frontend.generate(req('a'))[Symbol.asyncIterator]();
    const first = it.next();
    await Promise.resolve();
    expect(added.map((r) => r.requestId)).toEqual(['a']);
    expect(typeof added[0].arrivalTime).toBe('number');
    frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('a', [7], false), output('zzz', [1], false)], stats });
    const firstOutput = (await first).value;
    expect(firstOutput.outputs[0].tokenIds).toEqual([7]);
    expect(firstOutput.promptTokenIds).toEqual([1, 5, 6]);
    expect(frontend.stats().kvCacheUsage).toBe(0.25);
    frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('a', [7, 8], true)], stats });
    expect((await it.next()).value.finished).toBe(true);
    expect((await it.next()).done).toBe(true);
    expect(aborted).toEqual([]);
  });

  it('aborts the request when the consumer leaves early or the signal fires', async () => {
    const { frontend, aborted } = setup();
    const controller = new AbortController();
    const it = frontend.generate(req('b'), controller.signal)[Symbol.asyncIterator]();
    const pending = it.next();
    await Promise.resolve();
    controller.abort();
    expect(aborted).toEqual([['b']]);
    frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('b', [], true)], stats });
    expect((await pending).value.finished).toBe(true);

    const it2 = frontend.generate(req('c'))[Symbol.asyncIterator]();
    const p2 = it2.next();
    await Promise.resolve();
    frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('c', [3], false)], stats });
    await p2;
    await it2.return!(undefined);
    expect(aborted).toEqual([['b'], ['c']]);
  });

  it('refuses a request the KV cache cannot hold before sending, and surfaces core rejections', async () => {
    const { frontend, added } = setup(4); // 16 tokens of KV cache, max_model_len 32
    await expect(frontend.generate(req('d', 20))[Symbol.asyncIterator]().next()).rejects.toMatchObject({ param: 'max_tokens' });
    expect(added).toEqual([]);
    const pending = frontend.generate(req('e'))[Symbol.asyncIterator]().next();
    await Promise.resolve();
    frontend.handleEvent({ type: 'rejected', requestId: 'e', message: 'bad words', param: 'bad_words', name: 'RequestValidationError' });
    await expect(pending).rejects.toThrow(RequestValidationError);
    const broken = frontend.generate(req('h'))[Symbol.asyncIterator]().next();
    await Promise.resolve();
    frontend.handleEvent({ type: 'rejected', requestId: 'h', message: 'request h reached the engine with an empty prompt', param: null, name: 'EngineInvariantError' });
    await expect(broken).rejects.toThrow(EngineInvariantError);
  });

  it('a dead core fails running requests and refuses new ones with EngineDeadError', async () => {
    const { frontend } = setup();
    const pending = frontend.generate(req('f'))[Symbol.asyncIterator]().next();
    await Promise.resolve();
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    frontend.handleEvent({ type: 'dead', error: 'engine worker exited (code 1)' });
    await expect(pending).rejects.toThrow(EngineDeadError);
    expect(frontend.health()).toEqual({ alive: false, error: 'engine worker exited (code 1)' });
    await expect(frontend.generate(req('g'))[Symbol.asyncIterator]().next()).rejects.toThrow(EngineDeadError);
  });

  it('passes iteration stats to listeners until they unsubscribe', () => {
    const { frontend } = setup();
    const seen: number[] = [];
    const off = frontend.onIteration((s) => seen.push(s.generationTokens));
    const iteration = { ...emptyIteration, generationTokens: 3 };
    frontend.handleEvent({ type: 'step', outputs: [], stats, iteration });
    off();
    frontend.handleEvent({ type: 'step', outputs: [], stats, iteration });
    expect(seen).toEqual([3]);
  });

  it('bounds what it holds: refuses past --max-num-queued-reqs with 503, a request bigger than it with 400', async () => {
    const { frontend, added } = setup(64, 3);
    const many = (id: string, n: number): EngineRequest => ({ ...req(id), params: { ...req(id).params, n, temperature: 1 } });
    const a = frontend.generate(many('a', 2))[Symbol.asyncIterator]();
    const pendingA = a.next();
    await Promise.resolve();
    // 2 of 3 sequences held: one more fits, two more do not.
    expect(() => frontend.ensureCapacity(1)).not.toThrow();
    await expect(frontend.generate(many('b', 2))[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      name: 'EngineOverloadedError',
      retryAfterSeconds: 1,
    });
    await expect(frontend.generate(many('c', 4))[Symbol.asyncIterator]().next()).rejects.toThrow(RequestValidationError);
    expect(added.map((r) => r.requestId)).toEqual(['a']);
    // Once a finishes its sequences are free again.
    frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('a', [7], true)], stats });
    await pendingA;
    expect((await a.next()).done).toBe(true);
    expect(() => frontend.ensureCapacity(3)).not.toThrow();
  });

  it('reserves room for a request of several prompts at once: all or none, drawn on by its engine requests, given back on release', async () => {
    const { frontend, added } = setup(64, 5);
    const held = frontend.reserve(4, 'prompt');
    // 4 of 5 held: a second request of 2 is refused whole, and nothing of it reaches the core.
    expect(() => frontend.reserve(2)).toThrow(expect.objectContaining({ name: 'EngineOverloadedError', retryAfterSeconds: 1 }));
    expect(() => frontend.reserve(6, 'input')).toThrow(expect.objectContaining({ name: 'RequestValidationError', param: 'input' }));
    // The reserved request's prompts draw on its room, not on what is left.
    const first = frontend.generate(req('r0'), undefined, held)[Symbol.asyncIterator]();
    const second = frontend.generate(req('r1'), undefined, held)[Symbol.asyncIterator]();
    const pending = [first.next(), second.next()];
    await Promise.resolve();
    expect(added.map((r) => r.requestId)).toEqual(['r0', 'r1']);
    expect(() => frontend.ensureCapacity(1)).not.toThrow();
    expect(() => frontend.ensureCapacity(2)).toThrow(expect.objectContaining({ name: 'EngineOverloadedError' }));
    frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('r0', [7], true), output('r1', [7], true)], stats });
    await Promise.all(pending);
    expect([(await first.next()).done, (await second.next()).done]).toEqual([true, true]);
    // Held until released (twice is once).
    expect(() => frontend.ensureCapacity(2)).toThrow(expect.objectContaining({ name: 'EngineOverloadedError' }));
    held.release();
    held.release();
    expect(() => frontend.ensureCapacity(5)).not.toThrow();
  });

  it('pauses a request whose consumer falls behind and resumes it once it caught up', async () => {
    const { frontend, flow } = setup();
    const delta = req('p', 30);
    delta.params.output_kind = OUTPUT_KIND.DELTA;
    const it = frontend.generate(delta)[Symbol.asyncIterator]();
    const first = it.next();
    await Promise.resolve();
    for (let i = 0; i < BACKLOG_HIGH + 1; i++) {
      frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('p', [i], false)], stats });
    }
    await first;
    expect(flow).toEqual(['pause p']);
    // More outputs of steps already under way are still taken; the consumer reads them all.
    frontend.handleEvent({ type: 'step', iteration: emptyIteration, outputs: [output('p', [99], false)], stats });
    // The consumer takes the whole backlog at once, folded into one output, and that resumes it.
    const taken = (await it.next()).value as RequestOutput;
    expect(taken.outputs[0].tokenIds).toEqual([...Array.from({ length: BACKLOG_HIGH }, (_, i) => i + 1), 99]);
    expect(flow).toEqual(['pause p', 'resume p']);
    await it.return!(undefined);
  });
});
