/** @jest-environment ./test/helpers/ort-environment.js */
// Grammar-constrained speculation with drafts the test chooses (a real EngineCore on stories260K,
// the real grammar workers): drafts the grammar forbids are never emitted even where they are the
// raw model's favourite; drafts the grammar takes but the target rejects leave the matcher where
// the kept tokens put it; a reasoning section that ends inside a draft walk ends the walk there;
// preemption and late grammar masks keep the output exact.

import Ajv from 'ajv';
import { TextWatch } from '../../../../src/engine/core/text-watch';
import { StructuredOutputCompiler } from '../../../../src/engine/structured/grammar-compiler';
import { resolveConstraint } from '../../../../src/engine/structured/grammar-spec';
import type { EngineRequest, SamplingParams, StructuredOutputsParams } from '../../../../src/engine/types';
import type { LoadedModel } from '../../../../src/model/types';
import { loadStories, prompts, request, STORIES } from '../engine-fixtures';
import { needs } from '../../../helpers/needs';
import { KID_REGEX as REGEX, KID_SCHEMA as SCHEMA } from '../../../helpers/constrained-outputs';
import { oracle, ScriptedProposer, SpecCore, type CoreRun } from './spec-core';

const onStories = needs(STORIES);
const K = 4;

const JSON_SO: StructuredOutputsParams = { json: SCHEMA, disable_any_whitespace: true };
const REGEX_SO: StructuredOutputsParams = { regex: REGEX };
const validJson = (text: string) => new Ajv().compile(SCHEMA)(JSON.parse(text));

const greedy = (so: StructuredOutputsParams, extra: Partial<SamplingParams> = {}): Partial<SamplingParams> => ({ structured_outputs: so, max_tokens: 100, ignore_eos: false, ...extra });

/** Output tokens by prompt: what an oracle proposer drafts from. */
const byPrompt = (requests: EngineRequest[], run: CoreRun) => new Map(requests.map((r, i) => [r.promptTokenIds.join(), run.outputs[i].outputs[0].tokenIds]));
const tokensOf = (run: CoreRun) => run.outputs.map((o) => o.outputs[0].tokenIds);
/** The same requests again under fresh ids. */
const again = (requests: EngineRequest[]) => requests.map((r) => request(r.promptTokenIds, r.params, { structuredOutputsAfter: r.structuredOutputsAfter }));

onStories.describe('grammar-constrained drafts (stories260K, scripted proposers)', () => {
  let model: LoadedModel;
  let reference: SpecCore;
  let newline: number;
  const started: SpecCore[] = [];
  const start = async (proposer: ScriptedProposer, numBlocks?: number) => {
    const core = await SpecCore.start(model, proposer, { k: K, numBlocks });
    started.push(core);
    return core;
  };

  beforeAll(async () => {
    model = await loadStories();
    reference = await SpecCore.start(model, null);
    started.push(reference);
    // Raw "\n": JSON without free whitespace and these regexes never allow it.
    newline = [...Array(model.config.vocabSize).keys()].find((id) => {
      const bytes = model.tokenizer!.tokenBytes(id);
      return bytes.length === 1 && bytes[0] === 10;
    })!;
    expect(newline).toBeDefined();
  });
  afterAll(async () => {
    for (const core of started) await core.close();
  });

  /** `count` prompts for each of `params` (the oracles tell sequences apart by their prompt). */
  const requests = (params: Partial<SamplingParams>[], count = 2) => {
    const ps = prompts(model, count * params.length);
    expect(new Set(ps.map((p) => p.join())).size).toBe(ps.length);
    return ps.map((p, i) => request(p, params[i % params.length]));
  };

  it('drafts the grammar forbids are dropped, never kept though logit_bias makes them the raw argmax', async () => {
    // Each walk: the reference's next tokens (0..K-1 of them, all right), then "\n" the grammar forbids.
    const bias = { logit_bias: { [newline]: 100 } };
    const reqs = requests([greedy(JSON_SO, bias), greedy(REGEX_SO, bias)]);
    const want = await reference.run(reqs);
    const proposer = new ScriptedProposer(oracle(byPrompt(reqs, want), (d, ask) => [...d.slice(0, ask.output.length % K), newline, newline, newline]));
    const got = await (await start(proposer)).run(again(reqs));
    expect(tokensOf(got)).toEqual(tokensOf(want));
    for (const tokens of tokensOf(got)) expect(tokens).not.toContain(newline);
    expect(validJson(got.outputs[0].outputs[0].text)).toBe(true);
    expect(got.outputs[1].outputs[0].text).toMatch(new RegExp(`^${REGEX}$`));
    const rightDrafts = proposer.proposed.reduce((n, p) => n + p.drafts.filter((t) => t !== newline).length, 0);
    expect(got.spec.numAcceptedTokens).toBeGreaterThan(0);
    // Only the drafts before the first "\n" are verified and counted (vLLM's validate_tokens).
    expect(got.spec.numDraftTokens).toBeLessThanOrEqual(rightDrafts);
    expect(got.spec.acceptedPerPosition[K - 1]).toBe(0); // always a "\n" there
  });

  it('temperature 0.8: forbidden drafts are never verified, counted or kept', async () => {
    const proposer = new ScriptedProposer(() => [newline, newline, newline, newline]);
    const core = await start(proposer);
    const reqs = prompts(model, 3).flatMap((p, i) => [JSON_SO, REGEX_SO].map((so, j) => request(p, greedy(so, { temperature: 0.8, seed: 7 * i + j, logit_bias: { [newline]: 100 } }))));
    const got = await core.run(reqs);
    got.outputs.forEach((o, i) => {
      expect(o.outputs[0].finishReason).toBe('stop');
      expect(o.outputs[0].tokenIds).not.toContain(newline);
      if (i % 2 === 0) expect(validJson(o.outputs[0].text)).toBe(true);
      else expect(o.outputs[0].text).toMatch(new RegExp(`^${REGEX}$`));
    });
    expect(proposer.proposed.filter((p) => p.drafts.length > 0).length).toBeGreaterThan(20);
    expect(got.spec).toMatchObject({ numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0 });
  });

  it('drafts the grammar takes and the target rejects: the matcher is rolled back to the tokens kept', async () => {
    const reqs = requests([greedy(JSON_SO), greedy(REGEX_SO)]);
    const want = await reference.run(reqs);
    // The reference's next tokens up to a point, then other tokens the grammar allows (an in-thread matcher finds them).
    const compiler = await StructuredOutputCompiler.create(model.tokenizer!, model.config.vocabSize, model.eosTokenIds);
    const compiled = new Map(reqs.map((r) => [r.promptTokenIds.join(), compiler.compile(resolveConstraint(r.params.structured_outputs!))]));
    let detours = 0;
    const proposer = new ScriptedProposer(
      oracle(byPrompt(reqs, want), async (d, ask) => {
        const matcher = await compiler.createConstraint(compiled.get(ask.prompt.join())!);
        try {
          const turn = ask.output.length % Math.max(1, d.length);
          for (const t of [...ask.output, ...d.slice(0, turn)]) matcher.accept(t);
          const drafts = d.slice(0, turn);
          while (drafts.length < d.length) {
            await matcher.prepare();
            const scores = new Float32Array(model.config.vocabSize);
            matcher.apply(scores);
            const avoid = drafts.length === turn ? d[turn] : -1;
            const other = [...scores.keys()].find((id) => scores[id] === 0 && id !== avoid && !model.eosTokenIds.includes(id));
            if (other === undefined) break;
            if (drafts.length === turn) detours++;
            drafts.push(other);
            matcher.accept(other);
          }
          return drafts;
        } finally {
          matcher.dispose();
        }
      }),
    );
    const got = await (await start(proposer)).run(again(reqs));
    expect(tokensOf(got)).toEqual(tokensOf(want));
    expect(validJson(got.outputs[0].outputs[0].text)).toBe(true);
    expect(got.outputs[1].outputs[0].text).toMatch(new RegExp(`^${REGEX}$`));
    expect(detours).toBeGreaterThan(10);
    expect(got.spec.numAcceptedTokens).toBeGreaterThan(0);
    expect(got.spec.numAcceptedTokens).toBeLessThan(got.spec.numDraftTokens);
  });

  it('a reasoning section ending inside a draft walk ends the walk there (no mask was prepared after it)', async () => {
    const prompt = prompts(model, 1)[0];
    const free = (await reference.run([request(prompt, { max_tokens: 20 })])).outputs[0].outputs[0].tokenIds;
    // The marker: a token's text that first shows in the output at that token (index >= 3).
    const tokenizer = model.tokenizer!;
    const at = free.findIndex((t, i) => {
      if (i < 3) return false;
      const marker = new TextDecoder().decode(tokenizer.tokenBytes(t));
      const watch = new TextWatch(tokenizer, marker);
      return free.findIndex((u) => watch.push(u)) === i;
    });
    expect(at).toBeGreaterThanOrEqual(3);
    const marker = new TextDecoder().decode(tokenizer.tokenBytes(free[at]));
    const reqs = [request(prompt, greedy({ regex: '[a-z]{2,6}-[0-9]{3}' }), { structuredOutputsAfter: marker })];
    const want = await reference.run(reqs);
    const text = want.outputs[0].outputs[0].text;
    expect(text.slice(text.indexOf(marker) + marker.length)).toMatch(/^[a-z]{2,6}-[0-9]{3}$/);
    const proposer = new ScriptedProposer(oracle(byPrompt(reqs, want)));
    const got = await (await start(proposer)).run(again(reqs));
    expect(tokensOf(got)).toEqual(tokensOf(want));
    // A walk had the marker among its drafts with more after it: those were not verified.
    expect(proposer.proposed.some((p) => p.output.length <= at && at < p.output.length + p.drafts.length - 1)).toBe(true);
    expect(got.spec.numAcceptedTokens).toBeLessThan(got.spec.numDraftTokens);
  });

  it('preempted constrained sequences with drafts: output unchanged, KV freed', async () => {
    const reqs = requests([greedy(JSON_SO), greedy(REGEX_SO)], 4);
    const want = await reference.run(reqs);
    const proposer = new ScriptedProposer(oracle(byPrompt(reqs, want), (d) => [...d.slice(0, K - 1), newline]));
    const got = await (await start(proposer, 12)).run(again(reqs));
    expect(got.preemptions).toBeGreaterThan(0);
    expect(tokensOf(got)).toEqual(tokensOf(want));
    expect(got.spec.numAcceptedTokens).toBeGreaterThan(0);
    expect(got.kvUsage).toBe(0);
  });

  it('sequences whose grammar masks are late sit steps out with their drafts, and their output is unchanged', async () => {
    const reqs = requests([greedy(JSON_SO), greedy(REGEX_SO)], 3);
    const want = await reference.run(reqs);
    // Every few steps a compile sent straight to the matcher worker keeps it busy past the next forward pass.
    const wide = (i: number) => ({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 16 }, (_, j) => [`field_${i}_${j}`, { type: 'string', pattern: `^[a-z]{${1 + (j % 5)},${9 + i}}$` }])),
    });
    let calls = 0;
    const compiles: Promise<unknown>[] = [];
    const draft = oracle(byPrompt(reqs, want), (d) => [...d.slice(0, K - 1), newline]);
    const proposer = new ScriptedProposer((ask) => {
      if (calls++ % 6 === 2 && compiles.length < 3) compiles.push(core.grammars.client.compile(`busy-${calls}`, resolveConstraint({ json: wide(calls) }), 1).then((cs) => cs.forEach((c) => c.dispose())));
      return draft(ask);
    });
    const core = await start(proposer);
    const got = await core.run(again(reqs));
    await Promise.all(compiles);
    expect(tokensOf(got)).toEqual(tokensOf(want));
    expect(got.satOutWithDrafts).toBeGreaterThan(0);
    expect(got.kvUsage).toBe(0);
  });
});
