/** @jest-environment ./test/helpers/ort-environment.js */
// A request whose consumer stops reading is paused by the engine (its sequences leave the batch
// and free their KV blocks) and resumed once the consumer catches up; recomputed from its tokens,
// it generates exactly what it generates when read without pause: greedy, and seeded with n > 1.

import { createInProcessEngine } from '../../../src/engine';
import { BACKLOG_HIGH } from '../../../src/engine/output-stream';
import { OUTPUT_KIND, type EngineClient, type RequestOutput } from '../../../src/engine/types';
import type { LoadedModel } from '../../../src/model/types';
import { needs } from '../../helpers/needs';
import { waitFor } from '../../helpers/wait';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from './engine-fixtures';

needs(STORIES).describe('pausing a request whose consumer stops reading (stories260K)', () => {
  let model: LoadedModel;
  let engine: EngineClient;

  beforeAll(async () => {
    model = await loadStories();
    engine = await createInProcessEngine(model, engineOptions({ maxModelLen: 512 }));
  });
  afterAll(async () => {
    await engine?.shutdown();
  });

  /** Reads a DELTA stream with a stop after a few outputs long enough to be paused; returns each choice's tokens. */
  async function readWithStall(prompt: number[], sampling: object): Promise<number[][]> {
    const req = request(prompt, { ...sampling, output_kind: OUTPUT_KIND.DELTA });
    const it = engine.generate(req)[Symbol.asyncIterator]();
    const tokens: number[][] = [];
    const take = (out: RequestOutput): void => {
      for (const o of out.outputs) (tokens[o.index] ??= []).push(...o.tokenIds);
    };
    for (let i = 0; i < 3; i++) take((await it.next()).value as RequestOutput);
    // The consumer stops: the engine runs until BACKLOG_HIGH outputs wait, then sets the request aside.
    await waitFor(() => (engine.stats().numPaused ?? 0) > 0, 20_000, 'the request paused');
    const kvWhilePaused = engine.stats().kvCacheUsage;
    for (;;) {
      const next = await it.next();
      if (next.done) break;
      take(next.value);
    }
    expect(kvWhilePaused).toBe(0);
    return tokens;
  }

  it('greedy: the same tokens as an uninterrupted run', async () => {
    const [prompt] = prompts(model, 1);
    const sampling = { max_tokens: 3 * BACKLOG_HIGH + 20 };
    const alone = (await finalOutput(engine, request(prompt, sampling))).outputs[0].tokenIds;
    expect((await readWithStall(prompt, sampling))[0]).toEqual(alone);
    expect(engine.stats()).toMatchObject({ numRunning: 0, numWaiting: 0, numPaused: 0, kvCacheUsage: 0 });
  });

  it('seeded sampling with n = 2: every choice as in an uninterrupted run', async () => {
    const [, prompt] = prompts(model, 2);
    const sampling = { max_tokens: 3 * BACKLOG_HIGH + 20, n: 2, temperature: 0.9, seed: 42 };
    const alone = (await finalOutput(engine, request(prompt, sampling))).outputs.map((o) => o.tokenIds);
    expect(await readWithStall(prompt, sampling)).toEqual(alone);
  });
});
