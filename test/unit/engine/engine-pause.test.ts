/** @jest-environment ./test/helpers/ort-environment.js */
// A request whose consumer stops reading is paused by the engine (its sequences leave the batch,
// keeping their KV blocks) and resumed once the consumer catches up; it generates exactly what it
// generates when read without pause: greedy, and seeded with n > 1, in a float16 cache too (where a
// recompute of the K/V as a prefill rounds differently and used to flip seeded samples).

import { createInProcessEngine } from '../../../src/engine';
import { BACKLOG_HIGH } from '../../../src/engine/output-stream';
import { OUTPUT_KIND, type EngineClient, type EngineOptions } from '../../../src/engine/types';
import type { LoadedModel } from '../../../src/model/types';
import { needs } from '../../helpers/needs';
import { waitFor } from '../../helpers/wait';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from './engine-fixtures';

/** Reads a DELTA stream, stopping `pauses` times (every `every` tokens of choice 0) until the engine pauses it; returns each choice's tokens. */
async function readWithStalls(engine: EngineClient, prompt: number[], sampling: object, pauses: number, every: number): Promise<number[][]> {
  const it = engine.generate(request(prompt, { ...sampling, output_kind: OUTPUT_KIND.DELTA }))[Symbol.asyncIterator]();
  const tokens: number[][] = [];
  let stalls = 0;
  for (;;) {
    const next = await it.next();
    if (next.done) break;
    for (const o of next.value.outputs) (tokens[o.index] ??= []).push(...o.tokenIds);
    if (stalls < pauses && (tokens[0]?.length ?? 0) > (stalls + 1) * every) {
      stalls++;
      // The consumer stops: the engine runs until BACKLOG_HIGH outputs wait, then sets the request aside.
      await waitFor(() => (engine.stats().numPaused ?? 0) > 0, 20_000, 'the request paused');
      // Paused sequences keep their K/V.
      expect(engine.stats().kvCacheUsage).toBeGreaterThan(0);
    }
  }
  expect(stalls).toBe(pauses);
  return tokens;
}

function describePausing(name: string, options: Partial<EngineOptions>, cases: (get: () => { model: LoadedModel; engine: EngineClient }) => void): void {
  needs(STORIES).describe(name, () => {
    let model: LoadedModel;
    let engine: EngineClient;
    beforeAll(async () => {
      model = await loadStories();
      engine = await createInProcessEngine(model, engineOptions(options));
    });
    afterAll(async () => {
      await engine?.shutdown();
    });
    cases(() => ({ model, engine }));
  });
}

describePausing('pausing a request whose consumer stops reading (stories260K)', { maxModelLen: 512 }, (get) => {
  it('greedy: the same tokens as an uninterrupted run', async () => {
    const { model, engine } = get();
    const [prompt] = prompts(model, 1);
    const sampling = { max_tokens: 3 * BACKLOG_HIGH + 20 };
    const alone = (await finalOutput(engine, request(prompt, sampling))).outputs[0].tokenIds;
    expect((await readWithStalls(engine, prompt, sampling, 1, 3))[0]).toEqual(alone);
    expect(engine.stats()).toMatchObject({ numRunning: 0, numWaiting: 0, numPaused: 0, kvCacheUsage: 0 });
  });

  it('seeded sampling with n = 2: every choice as in an uninterrupted run', async () => {
    const { model, engine } = get();
    const [, prompt] = prompts(model, 2);
    const sampling = { max_tokens: 3 * BACKLOG_HIGH + 20, n: 2, temperature: 0.9, seed: 42 };
    const alone = (await finalOutput(engine, request(prompt, sampling))).outputs.map((o) => o.tokenIds);
    expect(await readWithStalls(engine, prompt, sampling, 1, 3)).toEqual(alone);
  });
});

describePausing('pausing with a float16 KV cache (stories260K)', { maxModelLen: 1024, maxNumBatchedTokens: 1024, kvCacheDtype: 'float16' }, (get) => {
  it('seeded sampling with n = 8, paused 12 times: every choice token for token as in an uninterrupted run', async () => {
    const { model, engine } = get();
    const [prompt] = prompts(model, 1);
    const sampling = { max_tokens: 800, n: 8, temperature: 1, seed: 1234 };
    const alone = (await finalOutput(engine, request(prompt, sampling))).outputs.map((o) => o.tokenIds);
    const paused = await readWithStalls(engine, prompt, sampling, 12, 30);
    for (let c = 0; c < 8; c++) expect({ choice: c, tokens: paused[c] }).toEqual({ choice: c, tokens: alone[c] });
    expect(engine.stats()).toMatchObject({ numRunning: 0, numWaiting: 0, numPaused: 0, kvCacheUsage: 0 });
  });
});
