// ChunkTemplate writes a stream chunk's JSON from a per-response head and the choice's known
// shape: it must be byte-for-byte what JSON.stringify(chunk) writes, whatever the delta holds.

import { ChunkTemplate, chunkJson, plainChatChoiceJson, plainCompletionChoiceJson } from '../../../src/serving/chunk-template';

const TRICKY_TEXTS = [
  '',
  ' Once',
  'say "hi"',
  'back\\slash',
  'tab\there\nnew line\r\n',
  '\u0000\u0001\u001f\u007f',
  '\u2028\u2029',
  'café 日本語 👋🏽',
  '\ud83d', // a lone high surrogate (a token cut through a character's bytes)
  '\udc4b',
  '</script><!-- & \' -->',
  '{"json":"inside"}',
];
const FINISHES: Array<[string | null, string | number | null]> = [
  [null, null],
  ['length', null],
  ['stop', null],
  ['stop', '\n\n"end"'],
  ['stop', 128001],
  ['stop', 0],
];
const USAGE = { prompt_tokens: 7, total_tokens: 12, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } };

describe('ChunkTemplate', () => {
  const heads: Array<[string, string, number, string]> = [
    ['cmpl-4f1c2b9a8e7d4c3b9a1f2e3d4c5b6a7f', 'text_completion', 1764550000, 'bench'],
    ['cmpl-"quoted"\\id-日本', 'text_completion', 0, 'org/model "v2" ☃'],
  ];

  it.each(heads)('completion chunks equal JSON.stringify (id %j)', (id, object, created, model) => {
    const template = new ChunkTemplate(id, object, created, model);
    for (const text of TRICKY_TEXTS) {
      for (const [finish, stop] of FINISHES) {
        for (const index of [0, 3]) {
          const choice = { index, text, logprobs: null, finish_reason: finish, stop_reason: stop };
          const json = plainCompletionChoiceJson(choice);
          expect(json).toBe(JSON.stringify(choice));
          for (const usage of [undefined, USAGE]) {
            const chunk = template.chunk(choice, json, usage);
            expect(chunkJson(chunk)).toBe(JSON.stringify(chunk));
            expect(chunk).toEqual(usage ? { id, object, created, model, choices: [choice], usage } : { id, object, created, model, choices: [choice] });
          }
        }
      }
    }
  });

  it('chat content deltas equal JSON.stringify, with and without stop_reason', () => {
    const template = new ChunkTemplate('chatcmpl-1', 'chat.completion.chunk', 1764550001, 'm');
    for (const text of TRICKY_TEXTS) {
      const open = { index: 0, delta: { content: text }, logprobs: null, finish_reason: null };
      expect(plainChatChoiceJson(open, text)).toBe(JSON.stringify(open));
      for (const [finish, stop] of FINISHES.filter(([f]) => f !== null)) {
        const last = { index: 1, delta: { content: text }, logprobs: null, finish_reason: finish, stop_reason: stop };
        const json = plainChatChoiceJson(last, text);
        expect(json).toBe(JSON.stringify(last));
        const chunk = template.chunk(last, json, USAGE);
        expect(chunkJson(chunk)).toBe(JSON.stringify(chunk));
      }
    }
  });

  it('other shapes (logprobs, tool-call deltas, token ids) go through JSON.stringify and still equal it', () => {
    const template = new ChunkTemplate('chatcmpl-2', 'chat.completion.chunk', 5, 'm');
    const logprobs = { content: [{ token: ' "a"', logprob: -0.25, bytes: [32, 34, 97, 34], top_logprobs: [{ token: '\n', logprob: -1e-7, bytes: [10] }] }] };
    const toolCall = {
      index: 0,
      delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Z\\u00fcrich\\n"}' } }] },
      logprobs: null,
      finish_reason: null,
    };
    const withLogprobs = { index: 0, delta: { content: 'a' }, logprobs, finish_reason: null };
    expect(plainChatChoiceJson(withLogprobs, 'a')).toBeUndefined();
    const completionLogprobs = { index: 0, text: 'x', logprobs: { tokens: ['x'], token_logprobs: [-0.5], top_logprobs: [{ x: -0.5 }], text_offset: [0] }, finish_reason: null, stop_reason: null };
    expect(plainCompletionChoiceJson(completionLogprobs)).toBeUndefined();
    const withIds = { index: 0, text: 'x', logprobs: null, finish_reason: 'stop', stop_reason: null, token_ids: [120] };
    for (const choice of [toolCall, withLogprobs, completionLogprobs, withIds, { index: 0, delta: { reasoning_content: 'hm', content: null }, logprobs: null, finish_reason: null }]) {
      for (const usage of [undefined, USAGE]) {
        const chunk = template.chunk(choice, undefined, usage);
        expect(chunkJson(chunk)).toBe(JSON.stringify(chunk));
      }
    }
  });

  it('declines values JSON.stringify would leave out or change (the caller then stringifies)', () => {
    expect(plainCompletionChoiceJson({ index: 0, text: 'a', logprobs: null, finish_reason: null, stop_reason: undefined as unknown as null })).toBeUndefined();
    expect(plainChatChoiceJson({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop', stop_reason: undefined }, 'a')).toBeUndefined();
    const nan = { index: 0, text: 'a', logprobs: null, finish_reason: null, stop_reason: NaN };
    expect(plainCompletionChoiceJson(nan)).toBe(JSON.stringify(nan));
  });

  it('a copy of a chunk, or one built elsewhere, has no template JSON (never a stale one)', () => {
    const template = new ChunkTemplate('cmpl-3', 'text_completion', 1, 'm');
    const chunk = template.chunk({ index: 0, text: 'a', logprobs: null, finish_reason: null, stop_reason: null }, undefined);
    expect(chunkJson(chunk)).toBeDefined();
    expect(chunkJson({ ...chunk, usage: USAGE })).toBeUndefined();
    expect(chunkJson({ id: 'x' })).toBeUndefined();
    expect(chunkJson(null)).toBeUndefined();
    expect(chunkJson('data')).toBeUndefined();
  });
});
