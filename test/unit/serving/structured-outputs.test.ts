// The serving layer's one entry point for structured outputs: request fields →
// StructuredOutputsParams (vLLM's mapping) or a 400 with the field the client sent.

import { RequestValidationError } from '../../../src/engine/errors';
import { structuredOutputsFromRequest } from '../../../src/serving/structured-outputs';

const fails = (body: Record<string, unknown>, param: string, message: RegExp) => {
  try {
    structuredOutputsFromRequest(body);
  } catch (err) {
    expect(err).toBeInstanceOf(RequestValidationError);
    expect([(err as RequestValidationError).param, (err as Error).message]).toEqual([param, expect.stringMatching(message)]);
    return;
  }
  throw new Error('expected a 400');
};

describe('structuredOutputsFromRequest', () => {
  it('nothing asked, or response_format text → null', () => {
    expect(structuredOutputsFromRequest({})).toBeNull();
    expect(structuredOutputsFromRequest({ response_format: { type: 'text' }, structured_outputs: null })).toBeNull();
  });

  it('structured_outputs passes through; response_format maps like vLLM', () => {
    expect(structuredOutputsFromRequest({ structured_outputs: { regex: 'a+' } })).toEqual({ params: { regex: 'a+' }, param: 'structured_outputs' });
    expect(structuredOutputsFromRequest({ response_format: { type: 'json_object' } })).toEqual({ params: { json_object: true }, param: 'response_format' });
    const schema = { type: 'object' };
    expect(structuredOutputsFromRequest({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } })).toEqual({
      params: { json: schema },
      param: 'response_format',
    });
    const tag = { type: 'structural_tag', format: { type: 'const_string', value: 'hi' } };
    expect(structuredOutputsFromRequest({ response_format: tag })!.params).toEqual({ structural_tag: JSON.stringify(tag) });
  });

  it('the deprecated guided_* fields are aliases; guided_decoding_backend xgrammar / auto is accepted', () => {
    expect(structuredOutputsFromRequest({ guided_json: { type: 'integer' }, guided_decoding_backend: 'xgrammar' })).toEqual({
      params: { json: { type: 'integer' } },
      param: 'guided_json',
    });
    expect(structuredOutputsFromRequest({ guided_choice: ['a'], guided_decoding_backend: 'auto' })!.params).toEqual({ choice: ['a'] });
    expect(structuredOutputsFromRequest({ guided_regex: 'x', guided_decoding_backend: 'xgrammar:disable-any-whitespace' })!.params).toEqual({ regex: 'x' });
    // Two guided kinds reach the engine's one-kind check as one source.
    expect(structuredOutputsFromRequest({ guided_regex: 'x', guided_grammar: 'root ::= "x"' })!.params).toEqual({ regex: 'x', grammar: 'root ::= "x"' });
  });

  it('adds an options-only source to the constraining one, as vLLM fills response_format into structured_outputs', () => {
    const schema = { type: 'object' };
    expect(
      structuredOutputsFromRequest({
        structured_outputs: { disable_any_whitespace: true },
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
      }),
    ).toEqual({ params: { json: schema, disable_any_whitespace: true }, param: 'response_format' });
    expect(structuredOutputsFromRequest({ structured_outputs: { disable_additional_properties: true }, guided_json: schema })).toEqual({
      params: { json: schema, disable_additional_properties: true },
      param: 'guided_json',
    });
    // Options alone stay what they were: a source for the engine's own check.
    expect(structuredOutputsFromRequest({ structured_outputs: { disable_any_whitespace: true } })!.params).toEqual({ disable_any_whitespace: true });
  });

  it('refuses two sources, unknown formats and other backends', () => {
    fails({ structured_outputs: { regex: 'a' }, response_format: { type: 'json_object' } }, 'response_format', /Only one of/);
    fails({ structured_outputs: { regex: 'a' }, guided_regex: 'b' }, 'guided_regex', /Only one of/);
    fails({ response_format: { type: 'xml' } }, 'response_format', /must be one of/);
    fails({ response_format: { type: 'json_schema' } }, 'response_format', /needs a `json_schema` object/);
    fails({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } }, 'response_format', /schema is required/);
    fails({ structured_outputs: 'regex' }, 'structured_outputs', /must be an object/);
    fails({ guided_regex: 'a', guided_decoding_backend: 'outlines' }, 'guided_decoding_backend', /not available/);
  });
});
