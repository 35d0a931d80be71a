// Speculation never changes greedy output: the same requests to a server with prompt-lookup
// speculation and to one without (stories260K, same flags, a KV cache small enough to preempt)
// give the same token ids, text, finish and stop reasons and logprobs, on every generating
// route, streamed or not, with stop strings and ids, max_tokens ending inside a draft, n > 1,
// best_of, penalties, bad words, a LoRA adapter, prompt logprobs and preemption. The
// speculative server also shows vLLM's spec_decode counters and its SpecDecoding log line.

import type OpenAI from 'openai';
import { loadModel } from '../../src/model/load-model';
import { LORA_MODULES } from '../../src/model/lora/lora-weights';
import { writeRandomPeftAdapter } from '../../src/model/lora/write-adapter';
import type { DecoderArchConfig } from '../../src/model/types';
import { loadOptions } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS } from '../helpers/server';
import { waitFor } from '../helpers/wait';
import { counter, expectSameOutput, startPair, type Pair } from './speculative-pair';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

const STORIES = defaultTestModel();
/** Repeats itself, so prompt lookup finds drafts from the first step. */
const REPETITIVE = 'Lily and Ben went to the park. Lily and Ben went to the park. Lily and Ben';
const ONCE = 'Once upon a time';

type Body = Record<string, unknown>;

/** Completions chunks folded into one choice per index: text, ids and logprobs joined, the last reasons. */
function foldCompletionChunks(chunks: any[]): any[] {
  const choices: any[] = [];
  for (const chunk of chunks) {
    for (const c of chunk.choices) {
      const into = (choices[c.index] ??= { text: '', token_ids: [], finish_reason: null, stop_reason: null, logprobs: { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] } });
      into.text += c.text;
      into.token_ids.push(...(c.token_ids ?? []));
      if (c.finish_reason) into.finish_reason = c.finish_reason;
      if (c.stop_reason !== undefined && c.stop_reason !== null) into.stop_reason = c.stop_reason;
      for (const key of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset']) into.logprobs[key].push(...(c.logprobs?.[key] ?? []));
    }
  }
  return choices;
}

/** Chat chunks folded the same way (content and its logprobs). */
function foldChatChunks(chunks: any[]): any[] {
  const choices: any[] = [];
  for (const chunk of chunks) {
    for (const c of chunk.choices) {
      const into = (choices[c.index] ??= { content: '', finish_reason: null, stop_reason: null, logprobs: [] });
      into.content += c.delta?.content ?? '';
      if (c.finish_reason) into.finish_reason = c.finish_reason;
      if (c.stop_reason !== undefined && c.stop_reason !== null) into.stop_reason = c.stop_reason;
      into.logprobs.push(...(c.logprobs?.content ?? []));
    }
  }
  return choices;
}

async function collect(stream: AsyncIterable<unknown>): Promise<any[]> {
  const chunks: any[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

needs(STORIES).describe('speculative decoding keeps greedy output identical (stories260K)', () => {
  let pair: Pair;
  let adapterDir: string;
  /** The plain server's greedy continuation of ONCE: stop strings and ids are picked from it. */
  let reference: { text: string; tokenIds: number[] };

  beforeAll(async () => {
    adapterDir = mkdtempSync(join(tmpdir(), 'ortllm-spec-lora-'));
    const config = (await loadModel(loadOptions(STORIES, { loadWeights: false }))).config as DecoderArchConfig;
    writeRandomPeftAdapter(adapterDir, config, { rank: 8, alpha: 19, seed: 7, modules: LORA_MODULES });
    // 12 blocks of 16 tokens: one long request fits, a handful at once preempt each other.
    pair = await startPair(STORIES, ['--num-gpu-blocks-override', '12', '--max-model-len', '192', '--enable-lora', '--max-loras', '1', '--lora-modules', `static=${adapterDir}`, '--enable-scale-out'], {
      VLLM_LOG_STATS_INTERVAL: '1',
    });
    const res: any = await pair.plain.client.completions.create({ model: 'stories', prompt: ONCE, max_tokens: 60, temperature: 0, return_token_ids: true } as never);
    reference = { text: res.choices[0].text, tokenIds: res.choices[0].token_ids };
  }, 2 * SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await pair?.stop();
    if (adapterDir) rmSync(adapterDir, { recursive: true, force: true });
  });

  const completion = async (body: Body) => {
    const request = { model: 'stories', temperature: 0, return_token_ids: true, ...body } as never;
    const [spec, plain] = [await pair.spec.client.completions.create(request), await pair.plain.client.completions.create(request)];
    return expectSameOutput(spec, plain);
  };

  it('/v1/completions: logprobs with top_logprobs, max_tokens ending inside a draft, echo and prompt_logprobs', async () => {
    for (const prompt of [ONCE, REPETITIVE]) {
      expect(await completion({ prompt, max_tokens: 60, logprobs: 3 })).toBeGreaterThan(100);
      for (const maxTokens of [1, 2, 3, 5, 6, 7, 9]) await completion({ prompt, max_tokens: maxTokens });
      await completion({ prompt, max_tokens: 20, logprobs: 2, echo: true, prompt_logprobs: 2 });
    }
  });

  it('/v1/completions: stop strings (dropped or kept), stop_token_ids, min_tokens and ignore_eos', async () => {
    const words = reference.text.trim().split(/\s+/);
    for (const stop of [words[6], ` ${words[10]}`, reference.text.slice(25, 27)]) {
      await completion({ prompt: ONCE, max_tokens: 60, stop: [stop], logprobs: 1 });
      await completion({ prompt: ONCE, max_tokens: 60, stop: [stop, 'zzz'], include_stop_str_in_output: true });
    }
    for (const index of [4, 9, 17]) await completion({ prompt: ONCE, max_tokens: 60, stop_token_ids: [reference.tokenIds[index]], logprobs: 1 });
    await completion({ prompt: REPETITIVE, max_tokens: 80, min_tokens: 70, ignore_eos: true });
  });

  it('/v1/completions: n > 1, best_of, penalties, logit_bias, bad_words and a LoRA adapter', async () => {
    // n > 1 needs random sampling; top_k 1 keeps it deterministic, through verify's random path.
    const oneHot = { temperature: 1, top_k: 1, seed: 5 };
    await completion({ prompt: REPETITIVE, max_tokens: 30, n: 3, logprobs: 1, ...oneHot });
    await completion({ prompt: ONCE, max_tokens: 30, n: 2, best_of: 3, ...oneHot });
    await completion({ prompt: REPETITIVE, max_tokens: 40, repetition_penalty: 1.2, frequency_penalty: 0.3, presence_penalty: 0.2 });
    await completion({ prompt: ONCE, max_tokens: 40, logit_bias: { [String(reference.tokenIds[3])]: -100 } });
    await completion({ prompt: REPETITIVE, max_tokens: 40, bad_words: ['park'] });
    await completion({ model: 'static', prompt: REPETITIVE, max_tokens: 40, logprobs: 2 });
  });

  it('/v1/completions streamed: the same text, ids, reasons and logprobs', async () => {
    for (const body of [{ prompt: REPETITIVE, max_tokens: 50, logprobs: 2 }, { prompt: ONCE, max_tokens: 50, stop: [reference.text.slice(30, 33)], n: 2, temperature: 1, top_k: 1 }]) {
      const request = { model: 'stories', temperature: 0, return_token_ids: true, stream: true as const, ...body } as unknown as OpenAI.CompletionCreateParamsStreaming;
      const spec = foldCompletionChunks(await collect(await pair.spec.client.completions.create(request)));
      const plain = foldCompletionChunks(await collect(await pair.plain.client.completions.create(request)));
      expectSameOutput(spec, plain);
      expect(plain[0].text.length).toBeGreaterThan(0);
    }
  });

  it('/v1/chat/completions, whole and streamed, with logprobs and top_logprobs', async () => {
    for (const content of [ONCE, REPETITIVE]) {
      const request = { model: 'stories', temperature: 0, messages: [{ role: 'user' as const, content }], max_tokens: 50, logprobs: true, top_logprobs: 3 };
      expect(expectSameOutput(await pair.spec.client.chat.completions.create(request), await pair.plain.client.chat.completions.create(request))).toBeGreaterThan(100);
      const streamed = { ...request, stream: true as const, stop: [reference.text.slice(20, 23)] };
      expectSameOutput(
        foldChatChunks(await collect(await pair.spec.client.chat.completions.create(streamed))),
        foldChatChunks(await collect(await pair.plain.client.chat.completions.create(streamed))),
      );
    }
  });

  it('/v1/responses and the tokens-in, tokens-out route', async () => {
    const request = { model: 'stories', input: REPETITIVE, max_output_tokens: 40, temperature: 0, store: false };
    const [spec, plain] = [await pair.spec.client.responses.create(request), await pair.plain.client.responses.create(request)];
    expect(spec.output_text).toBe(plain.output_text);
    expect(spec.usage).toEqual(plain.usage);

    const prompt = (await pair.plain.post('/tokenize', { model: 'stories', prompt: REPETITIVE })).tokens;
    for (const sampling of [{ max_tokens: 40, temperature: 0, logprobs: 2 }, { max_tokens: 6, temperature: 0, stop_token_ids: [reference.tokenIds[2]] }]) {
      const body = { model: 'stories', token_ids: prompt, sampling_params: sampling };
      expectSameOutput(await pair.spec.post('/inference/v1/generate', body), await pair.plain.post('/inference/v1/generate', body));
    }
  });

  it('requests that preempt each other finish with the same output', async () => {
    const bodies = Array.from({ length: 6 }, (_, i) => ({ prompt: i % 2 ? REPETITIVE : ONCE, max_tokens: 90 + i, ignore_eos: true, logprobs: 1 }));
    const run = (side: Pair['spec']) => Promise.all(bodies.map((b) => side.client.completions.create({ model: 'stories', temperature: 0, return_token_ids: true, ...b } as never)));
    const [spec, plain] = [await run(pair.spec), await run(pair.plain)];
    // A preempted sequence's K/V is recomputed by a prefill, whose attention sums in another order
    // than decodes, and the two servers preempt at different steps: logprobs may move in the 4th
    // digit, as they do between the plain server's own preempted and unpreempted runs.
    expectSameOutput(spec, plain, 1e-3);
    for (const side of [pair.spec, pair.plain]) expect(counter(await side.metrics(), 'vllm:num_preemptions_total')).toBeGreaterThan(0);
  });

  it('only the speculative server has the spec_decode counters, and they moved; its log has the SpecDecoding line', async () => {
    const spec = await pair.spec.metrics();
    const drafts = counter(spec, 'vllm:spec_decode_num_drafts_total');
    const draftTokens = counter(spec, 'vllm:spec_decode_num_draft_tokens_total');
    const accepted = counter(spec, 'vllm:spec_decode_num_accepted_tokens_total');
    expect(drafts).toBeGreaterThan(0);
    expect(draftTokens).toBeGreaterThanOrEqual(drafts);
    expect(accepted).toBeGreaterThan(0);
    expect(accepted).toBeLessThanOrEqual(draftTokens);
    const perPosition = [0, 1, 2, 3].map((pos) => counter(spec, 'vllm:spec_decode_num_accepted_tokens_per_pos_total', `position="${pos}"`));
    expect(perPosition.reduce((a, b) => a + b, 0)).toBe(accepted);
    expect(perPosition[0]).toBeGreaterThan(0);
    // Each later position is reached only through the earlier ones.
    for (let pos = 1; pos < 4; pos++) expect(perPosition[pos]).toBeLessThanOrEqual(perPosition[pos - 1]);
    expect(await pair.plain.metrics()).not.toContain('vllm:spec_decode');

    await waitFor(() => /SpecDecoding metrics: Mean acceptance length: \d+\.\d\d, .*Per-position acceptance rate: [\d.]+, [\d.]+, [\d.]+, [\d.]+, Avg Draft acceptance rate: [\d.]+%/.test(pair.spec.server.output()), 10_000);
    expect(pair.plain.server.output()).not.toContain('SpecDecoding metrics');
  });
});
