// Structured-output specs without a model: the shape checks (400 with param), the grammar
// spellings (GBNF, Lark) turned into xgrammar EBNF, and xgrammar's own parse errors, with the
// reason xgrammar printed.

import { RequestValidationError } from '../../../src/engine/errors';
import { buildGrammar } from '../../../src/engine/structured/grammar-builder';
import { gbnfToEbnf, larkToEbnf, looksLikeLark, toXgrammarEbnf } from '../../../src/engine/structured/grammar-dialects';
import { choiceGrammar, DEFAULT_MAX_WHITESPACE, NO_STRUCTURED_DEFAULTS, resolveConstraint } from '../../../src/engine/structured/grammar-spec';
import { loadXgrammar, type Xgrammar } from '../../../src/engine/structured/xgrammar';
import type { StructuredOutputsParams } from '../../../src/engine/types';
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';

let xg: Xgrammar;
beforeAll(async () => {
  xg = await loadXgrammar();
});

/** What a compile worker does first: the shape check, then xgrammar's parse. */
function checkStructuredOutputs(so: StructuredOutputsParams) {
  const spec = resolveConstraint(so);
  buildGrammar(xg, spec).delete();
  return spec;
}

const rejects = (fn: () => unknown, message: RegExp, param: string) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RequestValidationError);
    expect((err as Error).message).toMatch(message);
    expect((err as RequestValidationError).param).toBe(param);
    return;
  }
  throw new Error('expected a RequestValidationError');
};

describe('resolveConstraint', () => {
  it('reduces each kind to its source and cache key', () => {
    expect(resolveConstraint({ json: '{"type":"integer"}' })).toMatchObject({ kind: 'json', source: '{"type":"integer"}', anyWhitespace: true });
    expect(resolveConstraint({ json: { type: 'integer' }, disable_any_whitespace: true })).toMatchObject({ kind: 'json', anyWhitespace: false });
    expect(resolveConstraint({ json_object: true }).source).toBe('{"type":"object"}');
    expect(resolveConstraint({ choice: ['a "b"', 'c\\d\n'] }).source).toBe('root ::= "a \\"b\\"" | "c\\\\d\\x0a"');
    // Same spec, same key; whitespace mode is part of a JSON key.
    expect(resolveConstraint({ regex: 'a+' }).key).toBe(resolveConstraint({ regex: 'a+' }).key);
    expect(resolveConstraint({ json: {} }).key).not.toBe(resolveConstraint({ json: {}, disable_any_whitespace: true }).key);
    // Server defaults apply where the request is silent.
    expect(resolveConstraint({ json: {} }, { ...NO_STRUCTURED_DEFAULTS, disableAnyWhitespace: true }).anyWhitespace).toBe(false);
  });

  it('disable_additional_properties closes every object schema', () => {
    const spec = resolveConstraint({ json: { type: 'object', properties: { a: { type: 'object', properties: {} } }, additionalProperties: true }, disable_additional_properties: true });
    expect(JSON.parse(spec.source)).toEqual({ type: 'object', properties: { a: { type: 'object', properties: {}, additionalProperties: false } }, additionalProperties: false });
  });

  it('refuses shapes that cannot be served, naming the field', () => {
    rejects(() => resolveConstraint({}), /needs one of json, regex/, 'structured_outputs');
    rejects(() => resolveConstraint({ regex: 'a', grammar: 'root ::= "a"' }), /multiple are specified: regex, grammar/, 'structured_outputs');
    rejects(() => resolveConstraint({ choice: [] }), /must not be empty/, 'structured_outputs');
    rejects(() => resolveConstraint({ choice: [1] as never }), /list of strings/, 'structured_outputs');
    rejects(() => resolveConstraint({ json: '{' }), /not valid JSON/, 'structured_outputs');
    rejects(() => resolveConstraint({ json: [] as never }), /JSON schema object/, 'structured_outputs');
    rejects(() => resolveConstraint({ structural_tag: '{"triggers": []}' }), /"format"/, 'structured_outputs');
    rejects(() => resolveConstraint({ json_object: true, whitespace_pattern: ' ' }), /whitespace_pattern/, 'structured_outputs.whitespace_pattern');
  });

  it('rewrites the legacy structural tag to xgrammar\'s format', () => {
    const legacy = JSON.stringify({ type: 'structural_tag', structures: [{ begin: '<f>', schema: { type: 'object' }, end: '</f>' }], triggers: ['<f'] });
    expect(JSON.parse(resolveConstraint({ structural_tag: legacy }).source)).toEqual({
      type: 'structural_tag',
      format: { type: 'triggered_tags', triggers: ['<f'], tags: [{ type: 'tag', begin: '<f>', content: { type: 'json_schema', json_schema: { type: 'object' } }, end: '</f>' }] },
    });
  });
});

describe('JSON whitespace', () => {
  const grammarText = (so: StructuredOutputsParams, defaults?: Parameters<typeof resolveConstraint>[1]) => {
    const grammar = buildGrammar(xg, resolveConstraint(so, defaults)) as unknown as { ToString(): string; delete(): void };
    const text = grammar.ToString();
    grammar.delete();
    // Lookaheads (where a string may end) only read ahead; they emit nothing.
    return text.replace(/ \(=\(.*\)\)$/gm, '');
  };
  const PERSON = { type: 'object', properties: { name: { type: 'string' }, extra: {} }, required: ['name'] };

  it('is bounded by default, in schema rules and in the rules for values of any type', () => {
    for (const so of [{ json: PERSON }, { json_object: true }]) {
      const text = grammarText(so);
      expect(text).toMatch(/\[ \\n\\t\]/);
      expect(text).not.toMatch(/\[ \\n\\t\][*+]/);
    }
    expect(resolveConstraint({ json: {} }).maxWhitespace).toBe(DEFAULT_MAX_WHITESPACE);
    // No bound (max_whitespace null): xgrammar's unbounded runs, as vLLM.
    expect(grammarText({ json_object: true }, { ...NO_STRUCTURED_DEFAULTS, maxWhitespace: null })).toMatch(/\[ \\n\\t\]\*/);
    expect(resolveConstraint({ json: {} }).key).not.toBe(resolveConstraint({ json: {} }, { ...NO_STRUCTURED_DEFAULTS, maxWhitespace: 4 }).key);
  });

  it('the same rule holds in the json_schema parts of a structural tag', () => {
    const tag = { type: 'structural_tag', format: { type: 'triggered_tags', triggers: ['<f>'], tags: [{ type: 'tag', begin: '<f>', content: { type: 'json_schema', json_schema: PERSON }, end: '</f>' }] } };
    const legacy = { structures: [{ begin: '<f>', schema: PERSON, end: '</f>' }], triggers: ['<f>'] };
    for (const structural_tag of [JSON.stringify(tag), JSON.stringify(legacy)]) {
      expect(grammarText({ structural_tag })).not.toMatch(/\[ \\n\\t\][*+]/);
      expect(grammarText({ structural_tag, disable_any_whitespace: true })).not.toMatch(/\[ \\n\\t\]|", "|": "/);
      expect(grammarText({ structural_tag }, { ...NO_STRUCTURED_DEFAULTS, maxWhitespace: null })).toMatch(/\[ \\n\\t\]\*/);
    }
  });

  it('disable_any_whitespace: "," and ":" with nothing after them, nor anywhere else', () => {
    for (const so of [{ json: PERSON, disable_any_whitespace: true }, { json_object: true, disable_any_whitespace: true }]) {
      const text = grammarText(so);
      expect(text).not.toMatch(/\[ \\n\\t\]|", "|": "/);
      expect(text).toMatch(/"," /);
    }
  });
});

describe('grammar spellings', () => {
  it('GBNF: empty alternatives become "", `.` any character; strings, classes and comments are left alone', () => {
    expect(gbnfToEbnf('ws ::= | " " ws')).toBe('ws ::="" | " " ws');
    expect(gbnfToEbnf('root ::= ("a" | ) x\nx ::=\ny ::= "."')).toBe('root ::= ("a" |"" ) x\nx ::=""\ny ::= "."');
    expect(gbnfToEbnf('root ::= . [.|] # a . comment | \n')).toBe('root ::= [\\u0000-\\U0010FFFF] [.|] \n');
  });

  it('Lark: rules, continuation lines, single quotes, [optional] and start → root', () => {
    const lark = "// a comment\n?start: greeting name\ngreeting: 'hi' | \"hello\"\n    | 'hey'\nname: [\"mr \"] WORD\nWORD: \"bob\"\n";
    expect(looksLikeLark(lark)).toBe(true);
    expect(looksLikeLark('root ::= "a"')).toBe(false);
    expect(larkToEbnf(lark)).toBe('root ::= greeting name\ngreeting ::= "hi" | "hello" | "hey"\nname ::= ("mr ")? WORD\nWORD ::= "bob"');
    expect(() => toXgrammarEbnf('start: /[a-z]+/')).toThrow(/regular expressions/);
  });

  it('xgrammar parses what the rewrites produce', () => {
    for (const grammar of ['root ::= "<" w ">"\nw ::= | [a-z] w', "start: 'a' | 'b'", 'root ::= "x" .']) {
      expect(checkStructuredOutputs({ grammar }).kind).toBe('grammar');
    }
    expect(checkStructuredOutputs({ grammar: choiceGrammar(['x', 'y']) }).kind).toBe('grammar');
  });
});

describe('xgrammar parse of a spec (in a compile worker)', () => {
  it('says why xgrammar refused, with param structured_outputs.<kind>', () => {
    rejects(() => checkStructuredOutputs({ json: { type: 'objectx' } }), /Invalid JSON schema: Unsupported type "objectx"/, 'structured_outputs.json');
    rejects(() => checkStructuredOutputs({ grammar: 'root ::= "a" | b' }), /Invalid grammar: .*Rule "b" is not defined/, 'structured_outputs.grammar');
    rejects(() => checkStructuredOutputs({ grammar: 'start: /x/' }), /Invalid grammar: .*regular expressions/, 'structured_outputs.grammar');
    rejects(() => checkStructuredOutputs({ regex: '[a-z' }), /Invalid regex: .*Unclosed '\['/, 'structured_outputs.regex');
    rejects(() => checkStructuredOutputs({ structural_tag: '{"format": {"type": "nope"}}' }), /Invalid structural tag/, 'structured_outputs.structural_tag');
  });

  it('accepts valid specs of every kind, and keeps working after refusals', () => {
    for (const so of [{ json: { type: 'object' } }, { json_object: true }, { regex: '\\d{3}' }, { choice: ['a'] }, { grammar: 'root ::= "a"' }]) {
      expect(() => checkStructuredOutputs(so)).not.toThrow();
    }
    expect(() =>
      checkStructuredOutputs({ structural_tag: JSON.stringify({ type: 'structural_tag', format: { type: 'tag', begin: '<a>', content: { type: 'json_schema', json_schema: { type: 'integer' } }, end: '</a>' } }) }),
    ).not.toThrow();
  });
});

describe('SamplingParams.structured_outputs on the wire', () => {
  it('defaults to null; the old name guided_decoding is read as an alias (its backend must be xgrammar / auto)', () => {
    expect(normalizeSamplingParams({}).structured_outputs).toBeNull();
    expect(normalizeSamplingParams({ guided_decoding: { regex: 'a+', backend: 'xgrammar' } }).structured_outputs).toEqual({ regex: 'a+' });
    rejects(() => normalizeSamplingParams({ guided_decoding: { regex: 'a' }, structured_outputs: { regex: 'b' } }), /not both/, 'guided_decoding');
    rejects(() => normalizeSamplingParams({ guided_decoding: { regex: 'a', backend: 'outlines' } }), /not available/, 'guided_decoding');
  });
});
