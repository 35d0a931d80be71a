// Every built-in tool-call parser on text in its model family's real format: the non-streaming
// result, and the streamed deltas (cut at every character boundary, and one character at a
// time) re-assembled into exactly the same content and calls.

import { NamedToolCallParser, RequiredToolCallsParser, TOOL_PARSERS, type FunctionTool, type ToolParser } from '../../../src/serving/tool-parsers';
import { convertParameter } from '../../../src/serving/tool-parsers/qwen3-coder';
import { extracted, splits, streamPieces, withoutIds } from './parser-harness';

const WEATHER: FunctionTool = {
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' }, metric: { type: 'boolean' } } },
};

function parserOf(name: string, tools: FunctionTool[] = [WEATHER]): () => ToolParser {
  const Factory = TOOL_PARSERS.get(name);
  return () => new Factory({ tools });
}

type Expected = { content: string | null; calls: Array<{ name: string; arguments: string }> };

/** Non-streaming gives `expected`, and so does every way of streaming the text. */
function expectParses(make: () => ToolParser, text: string, expected: Expected): void {
  expect(withoutIds(extracted(make(), text))).toEqual(expected);
  for (const pieces of splits(text)) {
    const streamed = withoutIds(streamPieces(make(), pieces));
    if (JSON.stringify(streamed) !== JSON.stringify(expected)) {
      throw new Error(`streamed as ${JSON.stringify(pieces)}: ${JSON.stringify(streamed)} != ${JSON.stringify(expected)}`);
    }
  }
}

/**
 * Text that turns out malformed only after a call's name has streamed: non-streaming falls back
 * to content; a stream cannot take back what it sent (vLLM's behaviour too) but never throws.
 */
function expectLateFallback(make: () => ToolParser, text: string): void {
  expect(withoutIds(extracted(make(), text))).toEqual({ content: text, calls: [] });
  for (const pieces of splits(text)) expect(() => streamPieces(make(), pieces)).not.toThrow();
}

const call = (name: string, args: unknown) => ({ name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });

describe('hermes (Hermes 2 Pro / 3, Qwen2.5, Qwen3)', () => {
  const hermes = parserOf('hermes');

  it('one call, as Qwen2.5 writes it', () => {
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "San Francisco, CA"}}\n</tool_call>';
    expectParses(hermes, text, { content: null, calls: [call('get_weather', '{"city": "San Francisco, CA"}')] });
  });

  it('content, then several calls; arguments are the model\'s own JSON text', () => {
    const text = 'Let me check both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n'
      + '<tool_call>\n{"arguments": {"city":"Rome"}, "name": "get_weather"}\n</tool_call>';
    expectParses(hermes, text, {
      content: 'Let me check both.\n',
      calls: [call('get_weather', '{"city": "Paris", "days": 2}'), call('get_weather', '{"city":"Rome"}')],
    });
  });

  it('braces and quotes inside strings, nesting, non-ASCII, "parameters" for "arguments", no arguments', () => {
    const args = '{"code": "print(\\"}{\\")", "opts": {"a": [1, {"b": "é日本🙂"}]}}';
    const text = `<tool_call>{"name": "run", "parameters": ${args}}</tool_call><tool_call>{"name": "now"}</tool_call>`;
    expectParses(hermes, text, { content: null, calls: [call('run', args), call('now', '{}')] });
  });

  it('a last call without its closing tag still counts once the output ends', () => {
    expectParses(hermes, 'ok <tool_call>\n{"name": "get_weather", "arguments": {}}\n', { content: 'ok ', calls: [call('get_weather', '{}')] });
  });

  it('text that only looks like the start of a tag is content', () => {
    expectParses(hermes, 'a < b, and <tool is a word', { content: 'a < b, and <tool is a word', calls: [] });
    expectParses(hermes, 'ends with <tool_ca', { content: 'ends with <tool_ca', calls: [] });
  });

  it('malformed JSON falls back to content (and streaming never throws)', () => {
    const noName = '<tool_call>\n{name: get_weather}\n</tool_call>';
    expectParses(hermes, noName, { content: noName, calls: [] });
    expectLateFallback(hermes, 'Hi <tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>');
    expectLateFallback(hermes, '<tool_call>{"name": "get_weather", "arguments": {"city": "Pa');
  });

  it('streams the name first, then argument fragments that add up', () => {
    const parser = hermes();
    const deltas = ['<tool_call>{"name": "get_', 'weather", "arguments": {"ci', 'ty": "Oslo"}}', '</tool_call>']
      .map((piece, i, all) => parser.extractDelta(piece, i === all.length - 1));
    expect(deltas[0]).toBeNull();
    expect(deltas[1]?.toolCalls).toEqual([{ index: 0, id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/), type: 'function', function: { name: 'get_weather', arguments: '{"ci' } }]);
    expect(deltas[2]?.toolCalls).toEqual([{ index: 0, function: { arguments: 'ty": "Oslo"}' } }]);
    expect(deltas[3]).toBeNull();
  });
});

describe('llama3_json (Llama 3.1 / 3.2 / 4 JSON tool calling)', () => {
  const llama = parserOf('llama3_json');

  it('the whole output is a call object, "parameters" or "arguments"', () => {
    expectParses(llama, '{"name": "get_weather", "parameters": {"city": "Paris"}}', { content: null, calls: [call('get_weather', '{"city": "Paris"}')] });
    expectParses(llama, ' {"name": "get_weather", "arguments": {}}', { content: null, calls: [call('get_weather', '{}')] });
  });

  it('<|python_tag|> with several calls separated by ";" and text before it', () => {
    const text = 'Sure.<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_weather", "parameters": {"city": "Lima", "days": 3}}';
    expectParses(llama, text, {
      content: 'Sure.',
      calls: [call('get_weather', '{"city": "Paris"}'), call('get_weather', '{"city": "Lima", "days": 3}')],
    });
  });

  it('plain text, and JSON that is not a call, are content', () => {
    expectParses(llama, 'The answer is {42}.', { content: 'The answer is {42}.', calls: [] });
    expectParses(llama, '{"answer": 42}', { content: '{"answer": 42}', calls: [] });
    expectLateFallback(llama, '{"name": "get_weather", "parameters": {"city": "Par');
  });
});

describe('mistral', () => {
  const mistral = parserOf('mistral');

  it('before v11: [TOOL_CALLS] and a JSON array', () => {
    const text = 'Checking.[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Nice"}}]';
    expectParses(mistral, text, { content: 'Checking.', calls: [call('get_weather', '{"city": "Paris"}'), call('get_weather', '{"city": "Nice"}')] });
  });

  it('v11 and later: [TOOL_CALLS]name[ARGS]{...} per call, [ARGS] optional', () => {
    const text = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time{"zone": "CET"}';
    expectParses(mistral, text, { content: null, calls: [call('get_weather', '{"city": "Paris"}'), call('get_time', '{"zone": "CET"}')] });
  });

  it('ids are 9 alphanumeric characters (Mistral templates refuse others)', () => {
    const result = mistral().extract('[TOOL_CALLS]f[ARGS]{}');
    expect(result.toolCalls[0].id).toMatch(/^[A-Za-z0-9]{9}$/);
    const delta = mistral().extractDelta('[TOOL_CALLS]f{', false);
    expect(delta?.toolCalls?.[0].id).toMatch(/^[A-Za-z0-9]{9}$/);
  });

  it('text without [TOOL_CALLS], and broken calls, are content', () => {
    expectParses(mistral, 'Just text [TOOL', { content: 'Just text [TOOL', calls: [] });
    expectParses(mistral, '[TOOL_CALLS] [{"name": 1}]', { content: '[TOOL_CALLS] [{"name": 1}]', calls: [] });
    expectParses(mistral, '[TOOL_CALLS]bad name{}', { content: '[TOOL_CALLS]bad name{}', calls: [] });
  });
});

describe('pythonic (Llama 3.2 / 4, ToolACE)', () => {
  const pythonic = parserOf('pythonic');

  it('a list of calls with Python literals becomes JSON arguments', () => {
    const text = "[get_weather(city='San Francisco', metric=True), get_weather(city=\"Seattle\", days=3)]";
    expectParses(pythonic, text, {
      content: null,
      calls: [call('get_weather', { city: 'San Francisco', metric: true }), call('get_weather', { city: 'Seattle', days: 3 })],
    });
  });

  it('numbers, None, lists, tuples, dicts, escapes, empty calls, the Llama 4 wrapper', () => {
    const text = "<|python_start|>[f(a=-2.5, b=None, c=[1, 'x'], d={'k': (1, 2)}, e='it\\'s \\u00e9\\n', f=False), now()]<|python_end|>";
    expectParses(pythonic, text, {
      content: null,
      calls: [call('f', { a: -2.5, b: null, c: [1, 'x'], d: { k: [1, 2] }, e: "it's é\n", f: false }), call('now', {})],
    });
  });

  it('anything else is content', () => {
    expectParses(pythonic, 'Hello there', { content: 'Hello there', calls: [] });
    expectParses(pythonic, '[a link](http://x)', { content: '[a link](http://x)', calls: [] });
    expectLateFallback(pythonic, '[f(a=g())]');
    expectLateFallback(pythonic, "[f(a='open");
  });
});

describe('qwen3_coder (Qwen3-Coder XML calls)', () => {
  const coder = parserOf('qwen3_coder');

  it('parameters are converted by the tool\'s schema types; unknown ones stay strings', () => {
    const text = 'On it.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n3\n</parameter>\n'
      + '<parameter=metric>\ntrue\n</parameter>\n<parameter=note>\n42\n</parameter>\n</function>\n</tool_call>\n'
      + '<tool_call>\n<function=other>\n<parameter=x>\n{"a": 1}\n</parameter>\n</function>\n</tool_call>';
    expectParses(coder, text, {
      content: 'On it.\n',
      calls: [call('get_weather', { city: 'New York', days: 3, metric: true, note: '42' }), call('other', { x: '{"a": 1}' })],
    });
  });

  it('converts values by type', () => {
    expect(convertParameter('3', 'integer')).toBe(3);
    expect(convertParameter('3.5', 'number')).toBe(3.5);
    expect(convertParameter('x', 'integer')).toBe('x');
    expect(convertParameter('[1, 2]', 'array')).toEqual([1, 2]);
    expect(convertParameter('null', ['string', 'null'])).toBeNull();
    expect(convertParameter('False', 'boolean')).toBe(false);
  });

  it('a call without </function> is content', () => {
    expectLateFallback(coder, '<tool_call>\n<function=get_weather>\n<parameter=city>\nRome');
  });
});

describe('forced calls (tool_choice "required" / named)', () => {
  it('required: a JSON array of {name, parameters}', () => {
    const text = '[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_weather", "parameters": {"city": "Oslo"}}]';
    expectParses(() => new RequiredToolCallsParser({ tools: [WEATHER] }), text, {
      content: null,
      calls: [call('get_weather', '{"city": "Paris"}'), call('get_weather', '{"city": "Oslo"}')],
    });
    expect(new RequiredToolCallsParser({ tools: [] }).extract('[{"name": "f", "parameters": {').toolCalls).toEqual([]);
  });

  it('required, cut by max_tokens: the closed calls, streamed or not; the open one is dropped, not sent half-written', () => {
    const required = () => new RequiredToolCallsParser({ tools: [WEATHER] });
    const paris = '{"name": "get_weather", "parameters": {"city": "Paris"}}';
    expectParses(required, `[${paris}, {"name": "get_weather", "parameters": {"ci`, { content: null, calls: [call('get_weather', '{"city": "Paris"}')] });
    expectParses(required, `[${paris}, {"name": "get_weather", "parameters": {"city": "Oslo"}}`, {
      content: null,
      calls: [call('get_weather', '{"city": "Paris"}'), call('get_weather', '{"city": "Oslo"}')],
    });
    // Arguments complete but the call object still open: not a call yet.
    expectParses(required, `[${paris}, {"name": "get_weather", "parameters": {}`, { content: null, calls: [call('get_weather', '{"city": "Paris"}')] });
    expectParses(required, '[{"name": "get_weather", "parameters": {"city": "Par', { content: null, calls: [] });
    expectParses(required, ' [ ', { content: null, calls: [] });
  });

  it('required: output that is not a call list stays content', () => {
    expectParses(() => new RequiredToolCallsParser({ tools: [WEATHER] }), 'Paris', { content: 'Paris', calls: [] });
  });

  it('named: the output is the function\'s arguments', () => {
    expectParses(() => new NamedToolCallParser({ tools: [WEATHER] }, 'get_weather'), ' {"city": "Paris"}', {
      content: null,
      calls: [call('get_weather', '{"city": "Paris"}')],
    });
  });
});

describe('phi4_mini_json (Phi-4-mini functools[...])', () => {
  const phi4 = parserOf('phi4_mini_json');

  it('functools and a JSON array of calls, "arguments" or "parameters"', () => {
    const text = 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "parameters": {"city": "Lima", "days": 3}}]';
    expectParses(phi4, text, { content: null, calls: [call('get_weather', '{"city": "Paris"}'), call('get_weather', '{"city": "Lima", "days": 3}')] });
  });

  it('arguments holding arrays (a "]" inside the list), text before functools, an empty list', () => {
    const text = 'Let me look.\nfunctools [{"name": "get_weather", "arguments": {"city": "Oslo", "hours": [1, 2]}}]';
    expectParses(phi4, text, { content: 'Let me look.\n', calls: [call('get_weather', '{"city": "Oslo", "hours": [1, 2]}')] });
    expectParses(phi4, 'functools[]', { content: 'functools[]', calls: [] });
  });

  it('text without functools, and broken lists, are content', () => {
    expectParses(phi4, 'Paris is sunny; functool', { content: 'Paris is sunny; functool', calls: [] });
    expectParses(phi4, 'functools{"name": "get_weather"}', { content: 'functools{"name": "get_weather"}', calls: [] });
    expectParses(phi4, 'functools[{"name": 3}]', { content: 'functools[{"name": 3}]', calls: [] });
    expectLateFallback(phi4, 'functools[{"name": "get_weather", "arguments": {"city": "Par');
  });

  it('a "]" inside a string, "parameters", plain prose naming functools', () => {
    const text = 'Sure.functools[{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}, {"name": "get_time", "parameters": {"zone": "]"}}]';
    expectParses(phi4, text, { content: 'Sure.', calls: [call('get_weather', '{"city": "Paris", "days": [1, 2]}'), call('get_time', '{"zone": "]"}')] });
    for (const plain of ['I use functools a lot', 'functools[{"name": 3}]']) expectParses(phi4, plain, { content: plain, calls: [] });
  });
});

describe('registry', () => {
  it('has vLLM\'s names', () => {
    expect(TOOL_PARSERS.names()).toEqual(expect.arrayContaining(['hermes', 'llama3_json', 'llama4_json', 'mistral', 'phi4_mini_json', 'pythonic', 'qwen3_coder']));
    expect(() => TOOL_PARSERS.get('nope')).toThrow(/tool call parser 'nope' is not registered \(registered: hermes/);
  });
});

describe('openai (harmony)', () => {
  const openai = parserOf('openai');

  it('calls addressed to functions.* on the commentary channel; analysis dropped; final is content', () => {
    const text = '<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>';
    expectParses(openai, text, { content: null, calls: [call('get_weather', '{"city": "Paris"}')] });
    expectParses(openai, '<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>Done.', { content: 'Done.', calls: [] });
  });
});
