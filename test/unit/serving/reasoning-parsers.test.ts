// The reasoning parsers and the per-choice output parser that chains reasoning and tool parsing:
// non-streaming splits, and streams cut at every character boundary re-assembled to the same.

import type { Tokenizer } from '../../../src/model/types';
import {
  ChatOutputParser, countReasoningTokens, createChatOutputParser, outputParserFactories, structuredOutputsAfter, type ChatOutputDelta,
} from '../../../src/serving/chat-output';
import { REASONING_PARSERS, type ReasoningParser, type ReasoningSplit } from '../../../src/serving/reasoning';
import { TOOL_PARSERS } from '../../../src/serving/tool-parsers';
import { splits } from './parser-harness';

function reasoningParser(name: string, kwargs: Record<string, unknown> = {}): ReasoningParser {
  return new (REASONING_PARSERS.get(name))({ chatTemplateKwargs: kwargs });
}

function streamSplit(make: () => ReasoningParser, pieces: string[]): ReasoningSplit {
  const parser = make();
  let reasoning = '';
  let content = '';
  pieces.forEach((piece, i) => {
    const delta = parser.extractDelta(piece, i === pieces.length - 1);
    if (delta?.reasoning !== undefined) reasoning += delta.reasoning;
    if (delta?.content !== undefined) content += delta.content;
  });
  return { reasoning: reasoning || null, content: content || null };
}

function expectSplits(make: () => ReasoningParser, text: string, expected: ReasoningSplit): void {
  expect(make().extract(text)).toEqual(expected);
  for (const pieces of splits(text)) {
    const streamed = streamSplit(make, pieces);
    if (JSON.stringify(streamed) !== JSON.stringify(expected)) {
      throw new Error(`streamed as ${JSON.stringify(pieces)}: ${JSON.stringify(streamed)}`);
    }
  }
}

describe('deepseek_r1', () => {
  const r1 = () => reasoningParser('deepseek_r1');

  it('splits <think>…</think> from the answer', () => {
    expectSplits(r1, '<think>\nI add 2 and 2.\n</think>\n\nThe answer is 4.', { reasoning: '\nI add 2 and 2.\n', content: '\n\nThe answer is 4.' });
  });

  it('the opening tag may be in the prompt: output is reasoning until </think>', () => {
    expectSplits(r1, 'Think… ok.</think>Answer: 4', { reasoning: 'Think… ok.', content: 'Answer: 4' });
    expectSplits(r1, 'Still thinking when cut off', { reasoning: 'Still thinking when cut off', content: null });
    expectSplits(r1, '</think>Only an answer', { reasoning: null, content: 'Only an answer' });
  });

  it('a tail that looks like a tag is not taken for one', () => {
    expectSplits(r1, '<thinking is fun</th', { reasoning: '<thinking is fun</th', content: null });
  });

  it('knows when the prompt already closed the reasoning section', () => {
    expect(r1().isReasoningEnd('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(r1().isReasoningEnd('<|im_start|>assistant\n<think>\n')).toBe(false);
    expect(r1().isReasoningEnd('no tags')).toBe(false);
  });
});

describe('qwen3', () => {
  it('thinks by default; with enable_thinking false, untagged output is content', () => {
    expectSplits(() => reasoningParser('qwen3'), '<think>hmm</think>yes', { reasoning: 'hmm', content: 'yes' });
    expectSplits(() => reasoningParser('qwen3', { enable_thinking: false }), 'just the answer', { reasoning: null, content: 'just the answer' });
    expectSplits(() => reasoningParser('qwen3', { enable_thinking: false }), '<think>x</think>y', { reasoning: 'x', content: 'y' });
  });
});

describe('ChatOutputParser: reasoning, then tool calls', () => {
  const factories = outputParserFactories({ toolCallParser: 'hermes', reasoningParser: 'qwen3' });
  const make = (): ChatOutputParser =>
    createChatOutputParser(factories, { choice: { kind: 'auto' }, functions: [], chatTemplateKwargs: {}, promptText: '<think>\n' }) as ChatOutputParser;

  function streamAll(pieces: string[]) {
    const parser = make();
    const deltas: ChatOutputDelta[] = [];
    pieces.forEach((piece, i) => {
      const d = parser.parseDelta(piece, i === pieces.length - 1);
      if (d) deltas.push(d);
    });
    const join = (key: 'reasoning' | 'content') => deltas.map((d) => d[key] ?? '').join('') || null;
    const calls: Array<{ name: string; arguments: string }> = [];
    for (const d of deltas) {
      for (const c of d.tool_calls ?? []) {
        if (c.function.name !== undefined) calls[c.index] = { name: c.function.name, arguments: '' };
        calls[c.index].arguments += c.function.arguments ?? '';
      }
    }
    return { reasoning: join('reasoning'), content: join('content'), calls, toolsCalled: parser.toolsCalled };
  }

  it('a tool call after the thinking, streamed or not', () => {
    const text = 'I need the weather.</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const parsed = make().parse(text);
    expect(parsed).toMatchObject({
      reasoning: 'I need the weather.',
      content: '\n\n',
      toolCalls: [{ type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
      reasoningEnd: 'I need the weather.</think>'.length,
    });
    for (const pieces of splits(text)) {
      expect(streamAll(pieces)).toEqual({
        reasoning: 'I need the weather.',
        content: '\n\n',
        calls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }],
        toolsCalled: true,
      });
    }
  });

  it('<tool_call> inside the thinking is not a call', () => {
    const text = 'Maybe <tool_call>{"name": "x"}</tool_call>? No.</think>Plain answer.';
    expect(make().parse(text)).toEqual({
      reasoning: 'Maybe <tool_call>{"name": "x"}</tool_call>? No.',
      content: 'Plain answer.',
      toolCalls: [],
      reasoningEnd: text.length - 'Plain answer.'.length,
    });
    expect(streamAll([text])).toMatchObject({ content: 'Plain answer.', calls: [], toolsCalled: false });
  });

  it('no parser when there is nothing to parse; no reasoning parser once the prompt closed reasoning', () => {
    expect(createChatOutputParser({ tool: null, reasoning: null }, { choice: { kind: 'none' }, functions: [], chatTemplateKwargs: {}, promptText: '' })).toBeNull();
    const closed = createChatOutputParser(factories, { choice: { kind: 'none' }, functions: [], chatTemplateKwargs: {}, promptText: '<think>\n\n</think>\n\n' });
    expect(closed).toBeNull();
    const hermesOnly = createChatOutputParser({ tool: TOOL_PARSERS.get('hermes'), reasoning: null }, { choice: { kind: 'auto' }, functions: [], chatTemplateKwargs: {}, promptText: '' });
    expect(hermesOnly?.parse('</think>x')).toEqual({ reasoning: null, content: '</think>x', toolCalls: [], reasoningEnd: 0 });
  });

  it('structured outputs start after </think>, or at once when there is no thinking to wait for', () => {
    const parsing = { choice: { kind: 'none' as const }, functions: [], chatTemplateKwargs: {}, promptText: '<think>\n' };
    expect(structuredOutputsAfter(factories, parsing, true)).toBe('</think>');
    expect(structuredOutputsAfter(factories, parsing, false)).toBeNull();
    expect(structuredOutputsAfter(factories, { ...parsing, promptText: '<think>\n\n</think>\n\n' }, true)).toBeNull();
    expect(structuredOutputsAfter({ tool: null, reasoning: null }, parsing, true)).toBeNull();
  });

  it('counts the output tokens up to the end of the thinking', () => {
    const chars = { decode: (ids: readonly number[]) => ids.map((id) => String.fromCharCode(id)).join('') } as unknown as Tokenizer;
    const ids = [...'ab</think>cd'].map((c) => c.charCodeAt(0));
    expect(countReasoningTokens(chars, ids, 'ab</think>'.length, true)).toBe(10);
    expect(countReasoningTokens(chars, ids, 0, true)).toBe(0);
    expect(countReasoningTokens(chars, ids, ids.length, true)).toBe(ids.length);
  });
});
