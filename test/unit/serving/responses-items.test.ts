// The Responses API's pure parts: output items built from deltas with OpenAI's event order
// (text, reasoning, function calls, switching between them), and input items turned into the
// chat messages the template renders.

import { RequestValidationError } from '../../../src/engine/errors';
import { continuesFinalMessage, itemsToMessages, normalizeInput } from '../../../src/serving/responses/input-items';
import { OutputBuilder } from '../../../src/serving/responses/output-builder';
import { textFormatAsResponseFormat } from '../../../src/serving/responses/request-checks';

describe('OutputBuilder', () => {
  it('opens a message, streams text and closes it with the whole text', () => {
    const b = new OutputBuilder();
    const events = [...b.text('Once'), ...b.text(' upon'), ...b.finish('completed')];
    expect(events.map((e) => e.type)).toEqual([
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    ]);
    const id = b.items[0].id;
    expect(events.every((e) => e.type === 'response.output_item.added' || e.type === 'response.output_item.done' || e.item_id === id)).toBe(true);
    expect(events[0].item).toEqual({ id, type: 'message', role: 'assistant', status: 'in_progress', content: [] });
    expect(events[4]).toMatchObject({ text: 'Once upon', output_index: 0, content_index: 0 });
    expect(b.items).toEqual([{ id, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Once upon', annotations: [], logprobs: [] }] }]);
    expect(events[6].item).toEqual(b.items[0]);
  });

  it('keeps logprobs of the text and marks an item cut by the token limit incomplete', () => {
    const b = new OutputBuilder();
    const lp = { token: 'a', logprob: -0.5, bytes: [97], top_logprobs: [] };
    b.text('a', [lp]);
    const done = b.finish('incomplete');
    expect(done[0]).toMatchObject({ type: 'response.output_text.done', logprobs: [lp] });
    expect(b.items[0]).toMatchObject({ status: 'incomplete', content: [{ logprobs: [lp] }] });
  });

  it('cut by the token limit, a function call with whole arguments stays completed; one with half arguments is incomplete', () => {
    const b = new OutputBuilder();
    b.toolCall({ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a": 1}' } });
    b.finish('incomplete');
    expect(b.items[0]).toMatchObject({ type: 'function_call', arguments: '{"a": 1}', status: 'completed' });
    const cut = new OutputBuilder();
    cut.toolCall({ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a": ' } });
    cut.finish('incomplete');
    expect(cut.items[0]).toMatchObject({ type: 'function_call', status: 'incomplete' });
  });

  it('an empty generation still answers one empty message', () => {
    const b = new OutputBuilder();
    expect(b.finish('completed').map((e) => e.type)).toContain('response.output_item.done');
    expect(b.items).toHaveLength(1);
    expect(b.items[0]).toMatchObject({ type: 'message', content: [{ text: '' }] });
  });

  it('reasoning, then text, then two function calls: each item closes before the next opens', () => {
    const b = new OutputBuilder();
    const events = [
      ...b.reasoning('Think'), ...b.reasoning('ing.'),
      ...b.text('Calling.'),
      ...b.toolCall({ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather' } }),
      ...b.toolCall({ index: 0, function: { arguments: '{"city":' } }), ...b.toolCall({ index: 0, function: { arguments: '"Paris"}' } }),
      ...b.add({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } }] }),
      ...b.finish('completed'),
    ];
    expect(events.map((e) => `${e.type}@${String(e.output_index)}`)).toEqual([
      'response.output_item.added@0', 'response.content_part.added@0', 'response.reasoning_text.delta@0', 'response.reasoning_text.delta@0',
      'response.reasoning_text.done@0', 'response.content_part.done@0', 'response.output_item.done@0',
      'response.output_item.added@1', 'response.content_part.added@1', 'response.output_text.delta@1',
      'response.output_text.done@1', 'response.content_part.done@1', 'response.output_item.done@1',
      'response.output_item.added@2', 'response.function_call_arguments.delta@2', 'response.function_call_arguments.delta@2',
      'response.function_call_arguments.done@2', 'response.output_item.done@2',
      'response.output_item.added@3', 'response.function_call_arguments.delta@3',
      'response.function_call_arguments.done@3', 'response.output_item.done@3',
    ]);
    expect(b.items.map((i) => i.type)).toEqual(['reasoning', 'message', 'function_call', 'function_call']);
    expect(b.items[0]).toMatchObject({ content: [{ type: 'reasoning_text', text: 'Thinking.' }], status: 'completed' });
    expect(b.items[2]).toMatchObject({ call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' });
    expect(events[16]).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(b.items[3]).toMatchObject({ call_id: 'call_2', name: 'get_time', arguments: '{}' });
  });

  it('whitespace between items waits: dropped before a function call, sent before anything else', () => {
    const call = { index: 0, id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    const dropped = new OutputBuilder();
    expect([...dropped.reasoning('Hm.'), ...dropped.text('\n'), ...dropped.text('\n')].map((e) => e.type)).not.toContain('response.output_text.delta');
    dropped.toolCall(call);
    dropped.finish('completed');
    expect(dropped.items.map((i) => i.type)).toEqual(['reasoning', 'function_call']);

    const lp = (token: string) => ({ token, logprob: -1, bytes: [...Buffer.from(token)], top_logprobs: [] });
    const sent = new OutputBuilder();
    sent.reasoning('Hm.');
    expect(sent.text('\n', [lp('\n')])).toEqual([]);
    const events = sent.text('Sunny.', [lp('Sunny.')]);
    expect(events.filter((e) => e.type === 'response.output_text.delta')).toEqual([expect.objectContaining({ delta: '\nSunny.', logprobs: [lp('\n'), lp('Sunny.')] })]);
    sent.finish('completed');
    expect(sent.items[1]).toMatchObject({ type: 'message', content: [{ text: '\nSunny.' }] });

    // Whitespace at the very end is text too.
    const trailing = new OutputBuilder();
    trailing.reasoning('Hm.');
    trailing.text('\n\n');
    trailing.finish('completed');
    expect(trailing.items[1]).toMatchObject({ type: 'message', content: [{ text: '\n\n' }] });
  });
});

describe('text.format', () => {
  it("becomes chat's response_format, which the structured-outputs mapping reads", () => {
    const schema = { type: 'object' };
    expect(textFormatAsResponseFormat({ text: { format: { type: 'json_schema', name: 'n', schema, strict: true } } })).toEqual({
      type: 'json_schema',
      json_schema: { name: 'n', schema, strict: true },
    });
    expect(textFormatAsResponseFormat({ text: { format: { type: 'json_object' } } })).toEqual({ type: 'json_object' });
    expect(textFormatAsResponseFormat({ text: { format: { type: 'text' } } })).toBeNull();
    expect(textFormatAsResponseFormat({})).toBeNull();
  });
});

describe('input items', () => {
  it('a string is one user message; items get ids; unknown item types are refused', () => {
    const [item] = normalizeInput('Hi');
    expect(item).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }], id: expect.stringMatching(/^msg_[0-9a-f]{32}$/) });
    expect(normalizeInput([{ role: 'user', content: 'x', id: 'msg_mine' }])[0].id).toBe('msg_mine');
    expect(() => normalizeInput([{ type: 'web_search_call' }])).toThrow(RequestValidationError);
    expect(() => normalizeInput([{ type: 'function_call', call_id: 'c' }])).toThrow(/name must be a string/);
    expect(() => normalizeInput([{ role: 'robot', content: 'x' }])).toThrow(/role/);
    expect(() => normalizeInput(42)).toThrow(RequestValidationError);
  });

  it('function calls join the assistant message before them; outputs become tool messages', () => {
    const items = normalizeInput([
      { role: 'user', content: 'Weather?' },
      { type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Need a tool.' }], summary: [] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'Sunny' },
      { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'Noon' }] },
    ]);
    expect(itemsToMessages(items)).toEqual([
      { role: 'user', content: [{ type: 'input_text', text: 'Weather?' }] },
      {
        role: 'assistant',
        content: null,
        reasoning: 'Need a tool.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      { role: 'tool', content: 'Sunny', tool_call_id: 'call_1' },
      { role: 'tool', content: 'Noon', tool_call_id: 'call_2' },
    ]);
  });

  it('previous output items become assistant turns, reasoning left out when asked', () => {
    const output = [
      { id: 'rs_1', type: 'reasoning' as const, summary: [], content: [{ type: 'reasoning_text' as const, text: 'hmm' }], status: 'completed' as const },
      { id: 'msg_1', type: 'message' as const, role: 'assistant' as const, status: 'completed' as const, content: [{ type: 'output_text' as const, text: 'Done.', annotations: [] }] },
    ];
    expect(itemsToMessages(output, { skipReasoning: true })).toEqual([{ role: 'assistant', content: [{ type: 'output_text', text: 'Done.', annotations: [] }] }]);
    expect(itemsToMessages(output)).toEqual([{ role: 'assistant', content: 'Done.', reasoning: 'hmm' }]);
  });

  it('an unfinished final assistant message is continued (vLLM)', () => {
    expect(continuesFinalMessage(normalizeInput([{ role: 'user', content: 'x' }, { role: 'assistant', content: 'Once', status: 'incomplete' }]))).toBe(true);
    expect(continuesFinalMessage(normalizeInput([{ role: 'assistant', content: 'Once', status: 'completed' }]))).toBe(false);
    expect(continuesFinalMessage(normalizeInput('x'))).toBe(false);
  });
});
