// The serving layer without HTTP: request -> SamplingParams mapping (generation_config
// defaults only for unsent fields), max_tokens resolution, prompt building and logprob shapes.

import { RequestValidationError } from '../../../src/engine/errors';
import type { EngineClient, EngineRequest, RequestOutput } from '../../../src/engine/types';
import type { Tokenizer } from '../../../src/model/types';
import { chunkJson } from '../../../src/serving/chunk-template';
import { CompletionServing } from '../../../src/serving/completion-serving';
import { prepareCompletionPrompts, truncateTokens } from '../../../src/serving/completion-prompts';
import { mergeStreams } from '../../../src/serving/engine-stream';
import { appendCompletionLogprobs, chatLogprobEntries, emptyCompletionLogprobs, tokenNamer } from '../../../src/serving/logprobs';
import { resolveMaxTokens } from '../../../src/serving/max-tokens';
import { buildSamplingParams } from '../../../src/serving/sampling-params';
import { sentFields } from '../../../src/serving/sampling-request';
import type { ServingOptions } from '../../../src/serving/serving-options';
import { InlineTextProcessor } from '../../../src/engine/text/text-processor';
import { fakeArch } from '../../helpers/fake-engine';

/** A character-level tokenizer: id = char code + 10, BOS = 1. */
const charTokenizer: Tokenizer = {
  vocabSize: 512,
  bosTokenId: 1,
  eosTokenId: 2,
  padTokenId: null,
  bosToken: '<s>',
  eosToken: '</s>',
  encode: (text, opts) => [...(opts?.addSpecialTokens === false ? [] : [1]), ...[...text].map((c) => c.charCodeAt(0) + 10)],
  decode: (ids) => ids.filter((id) => id >= 10).map((id) => String.fromCharCode(id - 10)).join(''),
  tokenBytes: (id) => new TextEncoder().encode(id >= 10 ? String.fromCharCode(id - 10) : `<${id}>`),
  idToToken: (id) => String(id),
  isSpecial: (id) => id < 10,
};

const OPTS: ServingOptions = {
  servedModelNames: ['m'],
  returnTokensAsTokenIds: false,
  enablePromptTokensDetails: true,
  enableForceIncludeUsage: false,
  responseRole: 'assistant',
  trustRequestChatTemplate: false,
  maxLogprobs: 20,
  chatTemplateContentFormat: 'auto',
  enableAutoToolChoice: false,
  toolCallParser: null,
  excludeToolsWhenToolChoiceNone: false,
  parsers: { tool: null, reasoning: null },
  schedulingPolicy: 'fcfs',
};

function fakeEngine(generationDefaults: Record<string, number> = {}) {
  const requests: EngineRequest[] = [];
  const engine = {
    modelConfig: fakeArch(),
    maxModelLen: 64,
    maxNumSeqs: 8,
    tokenizer: charTokenizer,
    chatTemplate: null as EngineClient['chatTemplate'],
    /** Built on each read: tests swap chatTemplate after creating the engine. */
    get text(): EngineClient['text'] {
      return new InlineTextProcessor(charTokenizer, (this as { chatTemplate: EngineClient['chatTemplate'] }).chatTemplate);
    },
    eosTokenIds: [2],
    generationDefaults,
    ensureCapacity: () => undefined,
    reserve: (sequences: number) => ({ sequences, release: () => undefined }),
    generate(request: EngineRequest): AsyncIterable<RequestOutput> {
      requests.push(request);
      return (async function* () {
        yield {
          requestId: request.requestId,
          promptTokenIds: request.promptTokenIds,
          promptLogprobs: null,
          outputs: [{ index: 0, text: 'ab', tokenIds: [107, 108], cumulativeLogprob: null, logprobs: null, finishReason: 'length', stopReason: null }],
          finished: true,
          numCachedTokens: 3,
        } satisfies RequestOutput;
      })();
    },
  } as unknown as EngineClient;
  return { engine, requests };
}

const ctx = (over: Partial<Parameters<typeof buildSamplingParams>[1]> = {}) => ({
  sent: new Set<string>(),
  generationDefaults: {},
  maxTokens: 16,
  logprobs: null,
  vocabSize: 512,
  maxNumSeqs: 8,
  maxLogprobs: 20,
  stream: false,
  ...over,
});

describe('buildSamplingParams', () => {
  it('applies generation_config defaults only to fields the caller did not send', () => {
    const defaults = { temperature: 0.6, top_p: 0.9, top_k: 20, repetition_penalty: 1.1 };
    const body = { temperature: 0.2, top_k: null };
    const p = buildSamplingParams(body, ctx({ sent: sentFields(body), generationDefaults: defaults }));
    expect(p).toMatchObject({ temperature: 0.2, top_p: 0.9, top_k: 20, repetition_penalty: 1.1, max_tokens: 16 });
    const plain = buildSamplingParams({}, ctx());
    expect(plain).toMatchObject({ temperature: 1, top_p: 1, top_k: 0, repetition_penalty: 1 });
  });

  it('renames params for chat (logprobs -> top_logprobs, max_tokens -> max_completion_tokens)', () => {
    const run = () => buildSamplingParams({}, ctx({ logprobs: 30, paramNames: { logprobs: 'top_logprobs' } }));
    expect(run).toThrow(RequestValidationError);
    try {
      run();
    } catch (err) {
      expect((err as RequestValidationError).param).toBe('top_logprobs');
    }
  });

  it('streams and answers with logprobs ask for deltas, others for the final output only', () => {
    expect(buildSamplingParams({}, ctx({ stream: true })).output_kind).toBe(1);
    expect(buildSamplingParams({}, ctx({ logprobs: 5 })).output_kind).toBe(1);
    expect(buildSamplingParams({}, ctx()).output_kind).toBe(2);
  });
});

describe('resolveMaxTokens', () => {
  const base = { param: 'max_tokens' as const, endpointDefault: 16, generationConfigMax: null, promptLength: 10, maxModelLen: 64, promptParam: 'prompt' };
  it('uses the endpoint default, capped by the room left and generation_config max_new_tokens', () => {
    expect(resolveMaxTokens({ ...base, requested: null })).toBe(16);
    expect(resolveMaxTokens({ ...base, requested: null, promptLength: 60 })).toBe(4);
    expect(resolveMaxTokens({ ...base, requested: 30, generationConfigMax: 8 })).toBe(8);
    expect(resolveMaxTokens({ ...base, requested: null, endpointDefault: null })).toBe(54);
  });
  it('names both numbers when the request does not fit', () => {
    expect(() => resolveMaxTokens({ ...base, requested: 60 })).toThrow(
      "'max_tokens' or 'max_completion_tokens' is too large: 60. This model's maximum context length is 64 tokens and your request has 10 input tokens (60 > 64 - 10).",
    );
    expect(() => resolveMaxTokens({ ...base, requested: 1, promptLength: 64 })).toThrow(/maximum context length is 64 tokens.*64 input tokens/);
  });
});

describe('completion prompts', () => {
  const chars = new InlineTextProcessor(charTokenizer, null);
  const opts = { addSpecialTokens: true, truncatePromptTokens: null, truncationSide: null, maxModelLen: 64, vocabSize: 512 };
  it('accepts the four prompt forms', async () => {
    expect(await prepareCompletionPrompts('ab', chars, opts)).toEqual([{ text: 'ab', tokenIds: [1, 107, 108] }]);
    expect((await prepareCompletionPrompts(['a', 'b'], chars, opts)).map((p) => p.tokenIds)).toEqual([[1, 107], [1, 108]]);
    expect(await prepareCompletionPrompts([5, 6], chars, opts)).toEqual([{ text: null, tokenIds: [5, 6] }]);
    expect((await prepareCompletionPrompts([[5], [6, 7]], chars, opts)).map((p) => p.tokenIds)).toEqual([[5], [6, 7]]);
  });
  it('truncates from the left by default, from the right on request, -1 = max_model_len', async () => {
    expect(truncateTokens([1, 2, 3, 4], 2, null)).toEqual([3, 4]);
    expect(truncateTokens([1, 2, 3, 4], 2, 'right')).toEqual([1, 2]);
    const long = await prepareCompletionPrompts('x'.repeat(100), chars, { ...opts, truncatePromptTokens: -1 });
    expect(long[0].tokenIds).toHaveLength(64);
    expect(long[0].text).toBeNull();
  });
  it('refuses empty prompts and out-of-vocabulary ids with param prompt', async () => {
    for (const bad of [[], [[]], [600], '']) {
      const o = bad === '' ? { ...opts, addSpecialTokens: false } : opts;
      await expect(prepareCompletionPrompts(bad, chars, o)).rejects.toThrow(RequestValidationError);
    }
  });
});

describe('logprob formatting', () => {
  const position = (chosen: number, top: number[]) => ({
    chosen: { tokenId: chosen, logprob: -0.5, rank: 1 },
    top: top.map((tokenId, i) => ({ tokenId, logprob: -0.5 - i, rank: i + 1 })),
  });
  it('completions: offsets continue across tokens, top has the sampled token plus the top n', () => {
    const out = emptyCompletionLogprobs();
    const end = appendCompletionLogprobs(out, [107, 108], [position(107, [107, 109]), position(108, [110, 111])], 1, tokenNamer(charTokenizer, false), 4);
    expect(out.tokens).toEqual(['a', 'b']);
    expect(out.text_offset).toEqual([4, 5]);
    expect(end).toBe(6);
    expect(out.top_logprobs[0]).toEqual({ a: -0.5, c: -1.5 });
    expect(Object.keys(out.top_logprobs[1]!)).toEqual(['b', 'd']);
  });
  it('chat: bytes and top_logprobs in rank order; token_id:N names', () => {
    const [entry] = chatLogprobEntries([position(107, [109, 107])], 2, tokenNamer(charTokenizer, true));
    expect(entry).toEqual({
      token: 'token_id:107', logprob: -0.5, bytes: [...Buffer.from('token_id:107')],
      top_logprobs: [
        { token: 'token_id:109', logprob: -0.5, bytes: [...Buffer.from('token_id:109')] },
        { token: 'token_id:107', logprob: -1.5, bytes: [...Buffer.from('token_id:107')] },
      ],
    });
  });
});

describe('CompletionServing', () => {
  it('sends generation_config defaults for unsent fields and the caller\'s values for sent ones', async () => {
    const { engine, requests } = fakeEngine({ temperature: 0.3, max_new_tokens: 5 });
    const serving = new CompletionServing(engine, OPTS);
    const prep = await serving.prepare({ prompt: 'ab', top_p: 0.5, cache_salt: 's', priority: 0 }, 'rid');
    const response = await serving.complete(prep);
    expect(requests[0]).toMatchObject({ requestId: expect.stringMatching(/^cmpl-rid-[0-9a-f]{8}$/), promptTokenIds: [1, 107, 108], cacheSalt: 's' });
    expect(requests[0].params).toMatchObject({ temperature: 0.3, top_p: 0.5, max_tokens: 5 });
    expect(response).toMatchObject({
      id: 'cmpl-rid',
      model: 'm',
      choices: [{ index: 0, text: 'ab', finish_reason: 'length' }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, prompt_tokens_details: { cached_tokens: 3 } },
    });
  });

  it('gives each prompt of a list its own engine request and choice index', async () => {
    const { engine, requests } = fakeEngine();
    const serving = new CompletionServing(engine, OPTS);
    const response = await serving.complete(await serving.prepare({ prompt: ['a', 'b'], n: 1 }, 'x'));
    expect(requests.map((r) => r.requestId.slice(0, -9))).toEqual(['cmpl-x-0', 'cmpl-x-1']);
    expect(response.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(response.usage.prompt_tokens).toBe(4);
  });
});

describe('mergeStreams', () => {
  it('interleaves sources and closes all of them when the consumer stops', async () => {
    const closed: number[] = [];
    const source = (id: number, n: number) =>
      (async function* () {
        try {
          for (let i = 0; i < n; i++) {
            await new Promise((r) => setTimeout(r, 1));
            yield `${id}:${i}`;
          }
        } finally {
          closed.push(id);
        }
      })();
    const seen: string[] = [];
    for await (const { item } of mergeStreams([source(0, 3), source(1, 3)])) seen.push(item);
    expect(seen.sort()).toEqual(['0:0', '0:1', '0:2', '1:0', '1:1', '1:2']);
    closed.length = 0;
    for await (const _ of mergeStreams([source(0, 5), source(1, 5)])) break;
    expect(closed.sort()).toEqual([0, 1]);
  });
});

describe('streaming shapes on a scripted engine', () => {
  const step = (request: EngineRequest, text: string, ids: number[], finishReason: RequestOutput['outputs'][0]['finishReason'] = null): RequestOutput => ({
    requestId: request.requestId,
    promptTokenIds: request.promptTokenIds,
    promptLogprobs: null,
    outputs: [{ index: 0, text, tokenIds: ids, cumulativeLogprob: null, logprobs: null, finishReason, stopReason: null }],
    finished: finishReason !== null,
    numCachedTokens: 0,
  });

  function scripted(steps: (r: EngineRequest) => RequestOutput[]) {
    const { engine } = fakeEngine();
    (engine as { generate: EngineClient['generate'] }).generate = (request) =>
      (async function* () {
        for (const out of steps(request)) yield out;
      })();
    return engine;
  }

  it('chat: role chunk, content deltas, finish, usage chunk', async () => {
    const { ChatServing } = await import('../../../src/serving/chat-serving');
    const engine = scripted((r) => [step(r, 'a', [107]), step(r, 'b', [108], 'length')]);
    (engine as { chatTemplate: unknown }).chatTemplate = { render: () => 'hi' };
    const serving = new ChatServing(engine, OPTS);
    const prep = await serving.prepare({ messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } }, 'c');
    const chunks = [];
    for await (const c of serving.stream(prep)) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta ?? null)).toEqual([{ role: 'assistant', content: '' }, { content: 'a' }, { content: 'b' }, null]);
    expect(chunks[2].choices[0].finish_reason).toBe('length');
    expect(chunks[3].usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 2 });
  });

  it('chunks from the per-response template serialize exactly as JSON.stringify would (completions and chat, every option)', async () => {
    const { ChatServing } = await import('../../../src/serving/chat-serving');
    const engine = scripted((r) => [step(r, 'say "hi"\n\u2028', [107]), step(r, '☃ \\ \u0001', [108]), step(r, 'end', [109], 'length')]);
    (engine as { chatTemplate: unknown }).chatTemplate = { render: () => 'hi' };
    const sse = (c: object) => chunkJson(c) ?? JSON.stringify(c);
    const completions = new CompletionServing(engine, OPTS);
    const variants = [{}, { logprobs: 1 }, { stream_options: { include_usage: true, continuous_usage_stats: true } }, { return_token_ids: true }, { echo: true }];
    for (const extra of variants) {
      const prep = await completions.prepare({ prompt: 'ab', stream: true, max_tokens: 3, ...extra }, 't');
      const chunks: object[] = [];
      for await (const c of completions.stream(prep)) chunks.push(c);
      for (const c of chunks) expect(sse(c)).toBe(JSON.stringify(c));
      if (Object.keys(extra).length === 0) expect(chunks.every((c) => chunkJson(c) !== undefined)).toBe(true);
    }
    const chat = new ChatServing(engine, OPTS);
    for (const extra of [{}, { logprobs: true, top_logprobs: 1 }, { stream_options: { include_usage: true, continuous_usage_stats: true } }, { return_token_ids: true }]) {
      const prep = await chat.prepare({ messages: [{ role: 'user', content: 'x' }], stream: true, max_tokens: 3, ...extra }, 'c');
      const chunks: object[] = [];
      for await (const c of chat.stream(prep)) chunks.push(c);
      for (const c of chunks) expect(sse(c)).toBe(JSON.stringify(c));
      // Every content chunk (not the role chunk nor the closing usage chunk) came from the template.
      const content = chunks.slice(1).filter((c) => (c as { choices: unknown[] }).choices.length > 0);
      expect(content).toHaveLength(3);
      expect(content.every((c) => chunkJson(c) !== undefined)).toBe(true);
    }
  });

  it('an engine error mid-stream surfaces as a 500 after the chunks already sent', async () => {
    const engine = scripted((r) => [step(r, 'a', [107]), { ...step(r, '', [], 'error'), error: 'runner failed' }]);
    const serving = new CompletionServing(engine, OPTS);
    const prep = await serving.prepare({ prompt: 'ab', stream: true }, 'e');
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const c of serving.stream(prep)) seen.push(c.choices[0].text);
      })(),
    ).rejects.toMatchObject({ status: 500, message: 'runner failed' });
    expect(seen).toEqual(['a']);
  });
});

describe('chat prompt checks', () => {
  it('a model without a chat template answers 400 (param chat_template)', async () => {
    const { ChatServing } = await import('../../../src/serving/chat-serving');
    const { engine } = fakeEngine();
    const serving = new ChatServing(engine, OPTS);
    await expect(serving.prepare({ messages: [{ role: 'user', content: 'x' }] }, 'id')).rejects.toThrow(
      expect.objectContaining({ param: 'chat_template', message: expect.stringContaining('chat template') }),
    );
  });

  it('a trusted per-request template works even when the model has none', async () => {
    const { ChatServing } = await import('../../../src/serving/chat-serving');
    const { engine, requests } = fakeEngine();
    const serving = new ChatServing(engine, { ...OPTS, trustRequestChatTemplate: true });
    const prep = await serving.prepare({ messages: [{ role: 'user', content: 'hi' }], chat_template: '{{ bos_token }}{{ messages[0].content }}' }, 'id');
    expect(prep.prompts[0].text).toBe('<s>hi');
    await serving.complete(prep);
    expect(requests[0].params.max_tokens).toBe(64 - prep.prompts[0].tokenIds.length);
  });
});

describe('chat template options reach the template', () => {
  it('--chat-template-content-format, tools, reasoning_effort -> enable_thinking', async () => {
    const { ChatServing } = await import('../../../src/serving/chat-serving');
    const { engine } = fakeEngine();
    const template = '{{ messages[0].content is string }}|{{ tools[0].function.name if tools else "-" }}|{{ enable_thinking }}|{{ reasoning_effort }}';
    const serving = new ChatServing(engine, { ...OPTS, trustRequestChatTemplate: true, chatTemplateContentFormat: 'openai' });
    const body = { messages: [{ role: 'user', content: 'hi' }], chat_template: template, tool_choice: 'none' };
    const tools = [{ type: 'function', function: { name: 'f' } }];
    expect((await serving.prepare({ ...body, tools, reasoning_effort: 'none' }, 'x')).prompts[0].text).toBe('false|f|false|none');
    expect((await serving.prepare({ ...body, reasoning_effort: 'high', chat_template_kwargs: { enable_thinking: false } }, 'x')).prompts[0].text)
      .toBe('false|-|false|high');
    const strings = new ChatServing(engine, { ...OPTS, trustRequestChatTemplate: true, chatTemplateContentFormat: 'string' });
    expect((await strings.prepare({ ...body, reasoning_effort: 'low' }, 'x')).prompts[0].text).toBe('true|-|true|low');
  });
});

describe('forced tool calls and constraints after the thinking', () => {
  it('tool_choice required becomes a structured_outputs.json constraint that starts after </think>', async () => {
    const { ChatServing } = await import('../../../src/serving/chat-serving');
    const { REASONING_PARSERS } = await import('../../../src/serving/reasoning');
    const { engine } = fakeEngine();
    const opts = { ...OPTS, trustRequestChatTemplate: true, parsers: { tool: null, reasoning: REASONING_PARSERS.get('deepseek_r1') } };
    const serving = new ChatServing(engine, opts);
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const body = { messages: [{ role: 'user', content: 'hi' }], chat_template: '{{ messages[0].content }}', tools, tool_choice: 'required' };
    const prep = await serving.prepare(body, 'x');
    expect(prep.params[0].structured_outputs?.json).toMatchObject({ type: 'array', minItems: 1 });
    expect(prep.engineRequests[0].structuredOutputsAfter).toBe('</think>');
    expect(serving.reasoningState(prep)).toEqual({ reasoning_ended: false, reasoning_parser_kwargs: { chat_template_kwargs: {} } });
    // include_reasoning false, or a prompt that closed the thinking: the constraint starts at once.
    expect((await serving.prepare({ ...body, include_reasoning: false }, 'x')).engineRequests[0].structuredOutputsAfter).toBeNull();
    const closed = await serving.prepare({ ...body, chat_template: '{{ messages[0].content }}<think></think>' }, 'x');
    expect(closed.engineRequests[0].structuredOutputsAfter).toBeNull();
    // No constraint, no marker; a second constraint is refused.
    expect((await serving.prepare({ ...body, tool_choice: 'none' }, 'x')).engineRequests[0].structuredOutputsAfter).toBeUndefined();
    await expect(serving.prepare({ ...body, response_format: { type: 'json_object' } }, 'x')).rejects.toThrow(expect.objectContaining({ param: 'tool_choice' }));
  });
});

describe('drainAll', () => {
  it('aborts the sibling requests when one prompt fails, and gives back the room it reserved for all', async () => {
    const { drainAll } = await import('../../../src/serving/engine-stream');
    const signals: AbortSignal[] = [];
    const reserved: Array<{ sequences: number; released: boolean }> = [];
    const engine = {
      reserve(sequences: number) {
        const held = { sequences, released: false, release: () => void (held.released = true) };
        reserved.push(held);
        return held;
      },
      generate(request: EngineRequest, signal?: AbortSignal): AsyncIterable<RequestOutput> {
        signals.push(signal!);
        return (async function* () {
          if (request.requestId.startsWith('bad')) throw new Error('refused');
          await new Promise((resolve) => signal!.addEventListener('abort', resolve));
        })();
      },
    } as unknown as EngineClient;
    const params = { use_beam_search: false, n: 2 } as EngineRequest['params'];
    const requests = [{ requestId: 'ok', promptTokenIds: [1], params }, { requestId: 'bad', promptTokenIds: [1], params }];
    await expect(drainAll(engine, requests, [2, 2])).rejects.toThrow('refused');
    expect(signals.every((s) => s.aborted)).toBe(true);
    expect(reserved.map((r) => [r.sequences, r.released])).toEqual([[4, true]]);
  });
});
