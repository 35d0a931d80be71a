// tools / tool_choice checks (vLLM's messages, `param` naming the field) and what they resolve to.

import Ajv from 'ajv';
import { RequestValidationError } from '../../../src/engine/errors';
import { toolCallSchema } from '../../../src/serving/tool-call-schema';
import { resolveRequestTools, RESPONSES_TOOLS, type ToolServingOptions, type ToolSpelling } from '../../../src/serving/tool-choice';

const AUTO: ToolServingOptions = { enableAutoToolChoice: true, toolCallParser: 'hermes', excludeToolsWhenToolChoiceNone: false };
const PLAIN: ToolServingOptions = { enableAutoToolChoice: false, toolCallParser: null, excludeToolsWhenToolChoiceNone: false };
const TOOL = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

function rejects(body: Record<string, unknown>, param: string, message: RegExp, opts = AUTO, spelling?: ToolSpelling): void {
  let error: unknown;
  try {
    resolveRequestTools(body, opts, spelling);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(RequestValidationError);
  expect((error as RequestValidationError).param).toBe(param);
  expect((error as Error).message).toMatch(message);
}

describe('resolveRequestTools', () => {
  it('defaults: "auto" with tools, "none" without', () => {
    expect(resolveRequestTools({ tools: [TOOL] }, AUTO)).toEqual({
      functions: [{ name: 'get_weather', parameters: TOOL.function.parameters }],
      templateTools: [TOOL],
      choice: { kind: 'auto' },
    });
    expect(resolveRequestTools({}, PLAIN)).toEqual({ functions: [], templateTools: null, choice: { kind: 'none' } });
  });

  it('"none" renders the tools unless --exclude-tools-when-tool-choice-none', () => {
    expect(resolveRequestTools({ tools: [TOOL], tool_choice: 'none' }, PLAIN).templateTools).toEqual([TOOL]);
    expect(resolveRequestTools({ tools: [TOOL], tool_choice: 'none' }, { ...PLAIN, excludeToolsWhenToolChoiceNone: true }).templateTools).toBeNull();
  });

  it('"auto" needs --enable-auto-tool-choice and --tool-call-parser', () => {
    rejects({ tools: [TOOL] }, 'tool_choice', /^"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set$/, PLAIN);
    rejects({ tools: [TOOL], tool_choice: 'auto' }, 'tool_choice', /requires --enable-auto-tool-choice/, { ...AUTO, enableAutoToolChoice: false });
  });

  it('refuses malformed tools and choices with the field named', () => {
    rejects({ tools: [] }, 'tools', /`tools` must not be an empty array/);
    rejects({ tools: {} }, 'tools', /must be a list/);
    rejects({ tools: [{ type: 'function' }] }, 'tools.0.function', /must be an object/);
    rejects({ tools: [TOOL, { function: { name: '' } }] }, 'tools.1.function.name', /non-empty string/);
    rejects({ tools: [{ type: 'custom', function: { name: 'f' } }] }, 'tools.0.type', /must be 'function'/);
    rejects({ tools: [{ function: { name: 'f', parameters: 'x' } }] }, 'tools.0.function.parameters', /JSON Schema object/);
    rejects({ tools: [{ function: { name: 'f', parameters: { type: 'objekt' } } }] }, 'tools.0.function.parameters', /not a valid JSON Schema/);
    rejects({ tools: [{ function: { name: 'f', parameters: { required: 'city' } } }] }, 'tools.0.function.parameters', /not a valid JSON Schema/);
    rejects({ tool_choice: 'auto' }, 'tool_choice', /When using `tool_choice`, `tools` must be set\./);
    rejects({ tools: [TOOL], tool_choice: 'sometimes' }, 'tool_choice', /Invalid value for `tool_choice`/);
    rejects({ tools: [TOOL], tool_choice: { type: 'function' } }, 'tool_choice.function', /Correct usage/);
    rejects({ tools: [TOOL], tool_choice: { type: 'function', function: {} } }, 'tool_choice.function.name', /Expected field `name`/);
    rejects({ tools: [TOOL], tool_choice: { type: 'function', function: { name: 'other' } } }, 'tool_choice', /does not match any of the specified `tools`/);
    rejects({ tools: [TOOL], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }, 'tool_choice.type', /"allowed_tools" is not supported/);
  });
});

describe('resolveRequestTools in the Responses API spelling (flat function tools)', () => {
  const FLAT = { type: 'function', name: 'get_weather', description: 'Weather', parameters: TOOL.function.parameters, strict: true };
  const resolve = (body: Record<string, unknown>, opts = AUTO) => resolveRequestTools(body, opts, RESPONSES_TOOLS);
  const refuses = (body: Record<string, unknown>, param: string, message: RegExp) => rejects(body, param, message, AUTO, RESPONSES_TOOLS);

  it('reads the flat tool; the template gets chat\'s nested shape', () => {
    expect(resolve({ tools: [FLAT] })).toEqual({
      functions: [{ name: 'get_weather', description: 'Weather', parameters: TOOL.function.parameters, strict: true }],
      templateTools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: TOOL.function.parameters, strict: true } }],
      choice: { kind: 'auto' },
    });
  });

  it('a named choice is {type: "function", name}', () => {
    expect(resolve({ tools: [FLAT], tool_choice: { type: 'function', name: 'get_weather' } }, PLAIN).choice).toEqual({ kind: 'named', name: 'get_weather' });
    expect(resolve({ tools: [FLAT], tool_choice: 'required' }, PLAIN).choice).toEqual({ kind: 'required' });
  });

  it('names the Responses fields in errors', () => {
    refuses({ tools: [{ type: 'function' }] }, 'tools.0.name', /^tools\[0\]\.name must be a non-empty string/);
    refuses({ tools: [{ ...FLAT, parameters: { type: 'objekt' } }] }, 'tools.0.parameters', /tools\[0\]\.parameters is not a valid JSON Schema/);
    refuses({ tools: [{ ...FLAT, strict: 'yes' }] }, 'tools.0.strict', /must be a boolean/);
    refuses({ tools: [FLAT], tool_choice: { type: 'function' } }, 'tool_choice.name', /Expected field `name` in `tool_choice`! Correct usage: `\{"type": "function", "name": "my_function"\}`/);
    refuses({ tools: [FLAT], tool_choice: { type: 'function', name: 'other' } }, 'tool_choice', /does not match/);
    refuses({ tools: [FLAT], tool_choice: { type: 'web_search_preview' } }, 'tool_choice.type', /"web_search_preview" is not supported/);
    rejects({ tools: [FLAT] }, 'tool_choice', /requires --enable-auto-tool-choice/, PLAIN, RESPONSES_TOOLS);
  });
});

describe('toolCallSchema (what constrained decoding enforces)', () => {
  const weather = { name: 'get_weather', parameters: { type: 'object', properties: { city: { $ref: '#/$defs/City' } }, $defs: { City: { type: 'string' } } } };
  const time = { name: 'get_time' };

  it('required: an array of one or more {name, parameters}, $defs hoisted to the root', () => {
    const schema = toolCallSchema({ kind: 'required' }, [weather, time]) as any;
    expect(schema).toEqual({
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        anyOf: [
          { properties: { name: { type: 'string', enum: ['get_weather'] }, parameters: { type: 'object', properties: { city: { $ref: '#/$defs/City' } } } }, required: ['name', 'parameters'] },
          { properties: { name: { type: 'string', enum: ['get_time'] }, parameters: { type: 'object', properties: {} } }, required: ['name', 'parameters'] },
        ],
      },
      $defs: { City: { type: 'string' } },
    });
    const validate = new Ajv().compile(schema);
    expect(validate([{ name: 'get_weather', parameters: { city: 'Paris' } }, { name: 'get_time', parameters: {} }])).toBe(true);
    expect(validate([])).toBe(false);
    expect(validate([{ name: 'get_weather', parameters: { city: 3 } }])).toBe(false);
  });

  it('without parallel tool calls the array holds one call', () => {
    expect(toolCallSchema({ kind: 'required' }, [time], false)).toMatchObject({ minItems: 1, maxItems: 1 });
    expect(toolCallSchema({ kind: 'required' }, [time], true)).not.toHaveProperty('maxItems');
  });

  it('named: the function\'s parameters; "none" / "auto": nothing', () => {
    expect(toolCallSchema({ kind: 'named', name: 'get_weather' }, [weather, time])).toBe(weather.parameters);
    expect(toolCallSchema({ kind: 'named', name: 'get_time' }, [weather, time])).toEqual({ type: 'object', properties: {} });
    expect(toolCallSchema({ kind: 'auto' }, [weather])).toBeNull();
    expect(toolCallSchema({ kind: 'none' }, [weather])).toBeNull();
  });

  it('conflicting $defs are a 400', () => {
    const other = { name: 'x', parameters: { type: 'object', $defs: { City: { type: 'integer' } } } };
    expect(() => toolCallSchema({ kind: 'required' }, [weather, other])).toThrow(/Tool definition conflicts/);
  });
});
