// gpt-oss's harmony output through the `openai_gptoss` reasoning parser and the `openai` tool
// parser, whole and streamed in every split, alone and chained as the server chains them.
import { ChatOutputParser, type ChatOutputDelta } from '../../../src/serving/chat-output';
import { REASONING_PARSERS } from '../../../src/serving/reasoning';
import { TOOL_PARSERS } from '../../../src/serving/tool-parsers';
import { foldChatDelta, type StreamedChat } from '../../helpers/chat-stream';

const reasoningParser = () => new (REASONING_PARSERS.get('openai_gptoss'))({ chatTemplateKwargs: {} });
const toolParser = () => new (TOOL_PARSERS.get('openai'))({ tools: [] });

const THINK_THEN_ANSWER = '<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant<|channel|>final<|message|>Hello there!';
const TWO_THOUGHTS_AND_CALLS = '<|channel|>analysis<|message|>Need weather.<|end|>'
  + '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>'
  + '<|start|>assistant<|channel|>analysis<|message|>And time.<|end|>'
  + '<|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{"tz": "CET"}<|call|>';

/** Feeds `text` in pieces of `size` characters and folds the deltas together. */
function stream(parser: ChatOutputParser, text: string, size: number): StreamedChat {
  const out: StreamedChat = { reasoning: '', content: '', calls: [] };
  // A null delta (nothing to send yet) folds in as an empty one.
  const take = (d: ChatOutputDelta | null) => foldChatDelta(out, d ?? {});
  for (let i = 0; i < text.length; i += size) take(parser.parseDelta(text.slice(i, i + size), false));
  take(parser.parseDelta('', true));
  return out;
}

describe('openai_gptoss reasoning parser', () => {
  it('splits analysis from the final answer', () => {
    expect(reasoningParser().extract(THINK_THEN_ANSWER)).toEqual({ reasoning: 'User greets.', content: 'Hello there!' });
    expect(reasoningParser().extract('<|channel|>analysis<|message|>cut off mid tho')).toEqual({ reasoning: 'cut off mid tho', content: null });
    expect(reasoningParser().extract('<|channel|>final<|message|>Only an answer<|return|>')).toEqual({ reasoning: null, content: 'Only an answer' });
  });

  it('streams the same split in any piece size, never leaking a marker', () => {
    for (const size of [1, 2, 3, 7, 1000]) {
      const out = stream(new ChatOutputParser(reasoningParser(), null), THINK_THEN_ANSWER, size);
      expect(out).toEqual({ reasoning: 'User greets.', content: 'Hello there!', calls: [] });
    }
  });

  it('knows a prompt that already opened the final channel', () => {
    expect(reasoningParser().isReasoningEnd('…<|start|>assistant')).toBe(false);
    expect(reasoningParser().isReasoningEnd('…<|start|>assistant<|channel|>final<|message|>')).toBe(true);
  });
});

describe('openai tool parser', () => {
  it('reads calls on either side of the channel, drops analysis, keeps the final answer as content', () => {
    const parsed = toolParser().extract(TWO_THOUGHTS_AND_CALLS);
    expect(parsed.content).toBeNull();
    expect(parsed.toolCalls.map((c) => c.function)).toEqual([
      { name: 'get_weather', arguments: '{"city": "Paris"}' }, { name: 'get_time', arguments: '{"tz": "CET"}' }]);
    expect(parsed.toolCalls[0].id).toMatch(/^chatcmpl-tool-/);
    expect(toolParser().extract(THINK_THEN_ANSWER)).toEqual({ toolCalls: [], content: 'Hello there!' });
  });

  it('chains after the reasoning parser, whole and streamed', () => {
    const expected = {
      reasoning: 'Need weather.\nAnd time.',
      content: '',
      calls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }, { name: 'get_time', arguments: '{"tz": "CET"}' }],
    };
    const whole = new ChatOutputParser(reasoningParser(), toolParser()).parse(TWO_THOUGHTS_AND_CALLS);
    expect({ reasoning: whole.reasoning, content: whole.content ?? '', calls: whole.toolCalls.map((c) => c.function) }).toEqual(expected);
    for (const size of [1, 4, 9, 1000]) {
      expect(stream(new ChatOutputParser(reasoningParser(), toolParser()), TWO_THOUGHTS_AND_CALLS, size)).toEqual(expected);
    }
  });

  it('streams a preamble as content before the call', () => {
    const text = '<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}';
    expect(stream(new ChatOutputParser(null, toolParser()), text, 5)).toEqual({ reasoning: '', content: 'Checking.', calls: [{ name: 'f', arguments: '{}' }] });
  });
});
