/** @jest-environment ./test/helpers/ort-environment.js */
// Structured outputs in the engine on the real runner (stories260K) with the real xgrammar:
// sampled outputs (temperature > 0, several seeds) always obey the constraint; batching with
// unconstrained requests changes nothing for those; preemption keeps constrained outputs valid.

import Ajv from 'ajv';
import { createInProcessEngine } from '../../../src/engine';
import { RequestValidationError } from '../../../src/engine/errors';
import type { EngineClient, IterationStats, StructuredOutputsParams } from '../../../src/engine/types';
import type { LoadedModel } from '../../../src/model/types';
import { collect, engineOptions, finalOutput, loadStories, prompts, request, STORIES, storedBytesPerBlock } from './engine-fixtures';
import { needs } from '../../helpers/needs';

const onStories = needs(STORIES);

export const PERSON_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer' },
    mood: { enum: ['happy', 'sad'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 2 },
  },
  required: ['name', 'age', 'mood', 'tags'],
  additionalProperties: false,
};

const sampling = (so: StructuredOutputsParams, seed: number) => ({
  structured_outputs: so,
  temperature: 0.8,
  seed,
  max_tokens: 120,
  ignore_eos: false,
});

onStories.describe('structured outputs in the engine (stories260K, xgrammar)', () => {
  let model: LoadedModel;
  let engine: EngineClient;
  const iterations: IterationStats[] = [];
  /** Ids of the tokens whose bytes spell one of `texts`. */
  const tokensSpelling = (texts: string[]) => {
    const ids: string[] = [];
    for (let id = 0; id < model.tokenizer!.vocabSize; id++) {
      if (texts.includes(Buffer.from(model.tokenizer!.tokenBytes(id)).toString('latin1'))) ids.push(String(id));
    }
    expect(ids.length).toBeGreaterThanOrEqual(2);
    return ids;
  };
  const text = async (so: StructuredOutputsParams, seed: number, prompt?: number[]) => {
    const out = await finalOutput(engine, request(prompt ?? prompts(model, 1)[0], sampling(so, seed)));
    return out.outputs[0];
  };

  beforeAll(async () => {
    model = await loadStories();
    engine = await createInProcessEngine(model, engineOptions());
    engine.onIteration((s) => iterations.push(s));
  });
  afterAll(async () => {
    await engine?.shutdown();
  });

  it('JSON schema: every sampled output parses and validates (ajv), finish_reason stop', async () => {
    const validate = new Ajv().compile(PERSON_SCHEMA);
    for (const seed of [1, 2, 3, 4]) {
      const out = await text({ json: PERSON_SCHEMA, disable_any_whitespace: true }, seed);
      const value = JSON.parse(out.text);
      expect(validate(value)).toBe(true);
      expect(out.finishReason).toBe('stop');
    }
  });

  it('json_object, choice, regex and an EBNF / GBNF grammar', async () => {
    for (const seed of [5, 6]) {
      // A story model never closes a free-form object by itself: a logit_bias towards '"' and '}'
      // (another processor on the same seam) lets it finish within max_tokens.
      const closers = tokensSpelling(['"', '}', ' "']);
      const jo = await finalOutput(
        engine,
        request(prompts(model, 1)[0], { ...sampling({ json_object: true, disable_any_whitespace: true }, seed), logit_bias: Object.fromEntries(closers.map((id) => [id, 10])) }),
      );
      expect(jo.outputs[0].finishReason).toBe('stop');
      const obj = JSON.parse(jo.outputs[0].text);
      expect(typeof obj === 'object' && obj !== null && !Array.isArray(obj)).toBe(true);
      expect(['Lily', 'Tom', 'a dog']).toContain((await text({ choice: ['Lily', 'Tom', 'a dog'] }, seed)).text);
      expect((await text({ regex: '[a-z]{2,6}-[0-9]{3}' }, seed)).text).toMatch(/^[a-z]{2,6}-[0-9]{3}$/);
      const ebnf = (await text({ grammar: 'root ::= ("yes" | "no") " " [0-9]{1,2}' }, seed)).text;
      expect(ebnf).toMatch(/^(yes|no) [0-9]{1,2}$/);
      // GBNF spelling: an empty alternative and `.` (any character).
      const gbnf = (await text({ grammar: 'root ::= "<" item ">" # GBNF\nitem ::= | "x" . [0-9]\n' }, seed)).text;
      expect(gbnf).toMatch(/^<(x.[0-9])?>$/su);
    }
  });

  it('n = 3: one matcher per child, each output valid', async () => {
    const out = await finalOutput(engine, request(prompts(model, 1)[0], { ...sampling({ regex: '(cat|dog)s? [0-9]' }, 9), n: 3 }));
    expect(out.outputs).toHaveLength(3);
    for (const c of out.outputs) expect(c.text).toMatch(/^(cat|dog)s? [0-9]$/);
  });

  it('min_tokens holds EOS back only where the grammar allows more; a finished grammar still ends with stop', async () => {
    const out = await text({ regex: '[a-z]{1,20}' }, 3);
    const withMin = (await finalOutput(engine, request(prompts(model, 1)[0], { ...sampling({ regex: '[a-z]{1,20}' }, 3), min_tokens: 6 }))).outputs[0];
    expect(out.text).toMatch(/^[a-z]{1,20}$/);
    expect(withMin.text).toMatch(/^[a-z]{1,20}$/);
    expect(withMin.tokenIds.length).toBeGreaterThan(6); // six letters' worth at least, then EOS
    expect(withMin.finishReason).toBe('stop');
    // A two-token language: min_tokens 10 cannot be met, the grammar wins and the sequence stops.
    const short = (await finalOutput(engine, request(prompts(model, 1)[0], { ...sampling({ choice: ['a'] }, 1), min_tokens: 10 }))).outputs[0];
    expect(short.text).toBe('a');
    expect(short.finishReason).toBe('stop');
  });

  it('compiles each distinct grammar once (LRU cache) and reports the compile time', async () => {
    iterations.length = 0;
    const so = { regex: 'unique-[0-9]{4}' };
    await text(so, 1);
    await text(so, 2);
    const misses = iterations.reduce((n, s) => n + (s.grammarCacheMisses ?? 0), 0);
    const hits = iterations.reduce((n, s) => n + (s.grammarCacheHits ?? 0), 0);
    const seconds = iterations.flatMap((s) => s.grammarCompileSeconds ?? []);
    expect([misses, hits]).toEqual([1, 1]);
    expect(seconds).toHaveLength(1);
    expect(seconds[0]).toBeGreaterThan(0);
  });

  it('refuses bad constraints with a RequestValidationError naming the field, and keeps serving', async () => {
    const bad: Array<[StructuredOutputsParams, RegExp, string]> = [
      [{ json: { type: 'objectx' } }, /Invalid JSON schema: .*objectx/, 'structured_outputs.json'],
      [{ grammar: 'root ::= "a" | b' }, /Invalid grammar: .*"b" is not defined/, 'structured_outputs.grammar'],
      [{ regex: '[a-z' }, /Invalid regex/, 'structured_outputs.regex'],
      [{ choice: [] }, /choice must not be empty/, 'structured_outputs'],
      [{ regex: 'a', choice: ['a'] }, /only use one kind/, 'structured_outputs'],
    ];
    for (const [so, message, param] of bad) {
      const attempt = finalOutput(engine, request([1, 2, 3], sampling(so, 1)));
      await expect(attempt).rejects.toThrow(message);
      await expect(attempt).rejects.toMatchObject({ param });
      await expect(attempt).rejects.toBeInstanceOf(RequestValidationError);
    }
    expect((await text({ choice: ['ok'] }, 1)).text).toBe('ok');
  });

  it('a request aborted while its grammar compiles ends with finish_reason abort and never runs', async () => {
    const schema = { ...PERSON_SCHEMA, title: 'aborted while compiling' }; // a fresh cache key
    const req = request(prompts(model, 1)[0], sampling({ json: schema }, 1));
    const run = collect(engine, req);
    await new Promise((r) => setImmediate(r)); // the request has reached the core
    engine.abort([req.requestId]);
    const outs = await run;
    expect(outs[outs.length - 1].outputs[0].finishReason).toBe('abort');
    expect(outs.flatMap((o) => o.outputs[0].tokenIds)).toEqual([]);
    await new Promise((r) => setTimeout(r, 200));
    expect(engine.stats()).toMatchObject({ numRunning: 0, numWaiting: 0, kvCacheUsage: 0 });
    expect((await text({ choice: ['still serving'] }, 1)).text).toBe('still serving');
  });

  it('structuredOutputsAfter: the constraint starts after that text (the end of the thinking); without it at once', async () => {
    const tokenizer = model.tokenizer!;
    // A word the model is pushed to write first (logit_bias); once the grammar is on it masks it.
    const marker = tokenizer.encode('Once upon', { addSpecialTokens: false }).slice(-1);
    const markerText = new TextDecoder().decode(tokenizer.tokenBytes(marker[0]));
    expect(markerText).toBe(' upon');
    const params = { structured_outputs: { regex: '[ab]{4}' }, logit_bias: { [marker[0]]: 100 }, max_tokens: 12, ignore_eos: false };
    const prompt = prompts(model, 1)[0];
    const after = (await finalOutput(engine, request(prompt, params, { structuredOutputsAfter: markerText }))).outputs[0];
    expect(after.text.startsWith(markerText)).toBe(true);
    expect(after.text.slice(markerText.length)).toMatch(/^[ab]{4}$/);
    expect(after.finishReason).toBe('stop');
    const atOnce = (await finalOutput(engine, request(prompt, params))).outputs[0];
    expect(atOnce.text).toMatch(/^[ab]{4}$/);
  });

  it('24 concurrent, interleaved: unconstrained greedy outputs equal their solo runs, constrained ones are valid', async () => {
    const ps = prompts(model, 24);
    const plain = (i: number) => request(ps[i], { max_tokens: 24 });
    const solo: number[][] = [];
    for (let i = 0; i < 24; i += 2) solo.push((await finalOutput(engine, plain(i))).outputs[0].tokenIds);
    const validate = new Ajv().compile(PERSON_SCHEMA);
    const outs = await Promise.all(
      ps.map((p, i) => finalOutput(engine, i % 2 === 0 ? plain(i) : request(p, sampling({ json: PERSON_SCHEMA, disable_any_whitespace: true }, i)))),
    );
    outs.forEach((out, i) => {
      if (i % 2 === 0) expect(out.outputs[0].tokenIds).toEqual(solo[i / 2]);
      else expect(validate(JSON.parse(out.outputs[0].text))).toBe(true);
    });
  });
});

onStories.describe('structured outputs under a tiny KV budget (preemption)', () => {
  it('constrained outputs stay valid when their sequences are preempted and recomputed', async () => {
    const model = await loadStories();
    const perBlock = storedBytesPerBlock(model);
    const tiny = await createInProcessEngine(model, engineOptions({ maxModelLen: 160, kvCacheMemoryBytes: perBlock * 14 }));
    let preemptions = 0;
    tiny.onIteration((s) => (preemptions += s.numPreemptions));
    const validate = new Ajv().compile(PERSON_SCHEMA);
    const outs = await Promise.all(
      prompts(model, 10).map((p, i) => finalOutput(tiny, request(p, { ...sampling({ json: PERSON_SCHEMA, disable_any_whitespace: true }, i), max_tokens: 100 }))),
    );
    for (const out of outs) expect(validate(JSON.parse(out.outputs[0].text))).toBe(true);
    expect(preemptions).toBeGreaterThan(0);
    expect(tiny.stats().kvCacheUsage).toBe(0);
    await tiny.shutdown();
  });
});
