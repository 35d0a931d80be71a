// checkGrammarBounds: each limit of --structured-outputs-limits refuses what is over it (400
// with param structured_outputs.<kind>) and admits what is at it; recursive schemas stay legal.

import { RequestValidationError } from '../../../src/engine/errors';
import { checkGrammarBounds } from '../../../src/engine/structured/grammar-bounds';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS, type StructuredOutputsLimits } from '../../../src/engine/structured/grammar-limits';
import { resolveConstraint } from '../../../src/engine/structured/grammar-spec';
import type { StructuredOutputsParams } from '../../../src/engine/types';
import { parseStructuredOutputsLimits } from '../../../src/config/structured-outputs-limits';
import { deepSchema, enumsSchema, refChainSchema } from '../../helpers/hostile-schemas';

const LIMITS: StructuredOutputsLimits = { ...DEFAULT_STRUCTURED_OUTPUTS_LIMITS, maxNestingDepth: 8, maxRefDepth: 4, maxAlternatives: 10, maxPatternLength: 16, maxSourceBytes: 4096 };

const bounds = (so: StructuredOutputsParams, limits = LIMITS) => () => checkGrammarBounds(so, resolveConstraint(so), limits);

function over(so: StructuredOutputsParams, key: string, param: string, limits = LIMITS): void {
  let caught: unknown = null;
  try {
    bounds(so, limits)();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RequestValidationError);
  expect((caught as RequestValidationError).message).toContain(key);
  expect((caught as RequestValidationError).param).toBe(param);
}

describe('checkGrammarBounds', () => {
  it('nesting depth, $ref targets included', () => {
    expect(bounds({ json: deepSchema(8) })).not.toThrow();
    over({ json: deepSchema(9) }, 'max_nesting_depth', 'structured_outputs.json');
    over({ json: { type: 'array', items: { type: 'array', items: deepSchema(7) } } }, 'max_nesting_depth', 'structured_outputs.json');
    const manyRefs = { ...LIMITS, maxRefDepth: 100 };
    expect(bounds({ json: refChainSchema(9) }, manyRefs)).not.toThrow();
    over({ json: refChainSchema(10) }, 'max_nesting_depth', 'structured_outputs.json', manyRefs);
  });

  it('$ref chains', () => {
    const aliases = (n: number) => ({ $defs: Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, i + 1 < n ? { $ref: `#/$defs/a${i + 1}` } : { type: 'string' }])), $ref: '#/$defs/a0' });
    expect(bounds({ json: aliases(4) })).not.toThrow();
    over({ json: aliases(6) }, 'max_ref_depth', 'structured_outputs.json');
  });

  it('recursive schemas are legal (a reference into its own path adds no depth)', () => {
    const tree = { $defs: { node: { type: 'object', properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } }, $ref: '#/$defs/node' };
    expect(bounds({ json: tree })).not.toThrow();
    expect(bounds({ json: { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' } })).not.toThrow();
  });

  it('enum, anyOf and choice sizes; patterns; source size', () => {
    expect(bounds({ json: enumsSchema(1, 10, 'ok') })).not.toThrow();
    over({ json: enumsSchema(1, 11, 'big') }, 'max_alternatives', 'structured_outputs.json');
    over({ json: { anyOf: Array.from({ length: 11 }, () => ({ type: 'string' })) } }, 'max_alternatives', 'structured_outputs.json');
    over({ choice: Array.from({ length: 11 }, (_, i) => `c${i}`) }, 'max_alternatives', 'structured_outputs.choice');
    over({ regex: 'a'.repeat(17) }, 'max_pattern_length', 'structured_outputs.regex');
    over({ json: { type: 'string', pattern: 'b'.repeat(17) } }, 'max_pattern_length', 'structured_outputs.json');
    over({ grammar: `root ::= "${'x'.repeat(5000)}"` }, 'max_source_bytes', 'structured_outputs.grammar');
  });

  it('schemas inside a structural tag', () => {
    const tag = (schema: unknown) => ({ structural_tag: JSON.stringify({ type: 'structural_tag', format: { type: 'tag', begin: '<a>', content: { type: 'json_schema', json_schema: schema }, end: '</a>' } }) });
    expect(bounds(tag(deepSchema(8)))).not.toThrow();
    over(tag(deepSchema(9)), 'max_nesting_depth', 'structured_outputs.structural_tag');
  });
});

describe('--structured-outputs-limits', () => {
  it('overrides the given keys and keeps the defaults of the others', () => {
    const limits = parseStructuredOutputsLimits('{"max_nesting_depth": 16, "compile_timeout_s": 2.5}');
    expect(limits).toEqual({ ...DEFAULT_STRUCTURED_OUTPUTS_LIMITS, maxNestingDepth: 16, compileTimeoutSeconds: 2.5 });
  });

  it('refuses unknown keys, non-positive values and more memory than WASM32 has', () => {
    expect(() => parseStructuredOutputsLimits('{"max_depth": 3}')).toThrow(/unknown key 'max_depth'/);
    expect(() => parseStructuredOutputsLimits('{"max_tools": 0}')).toThrow(/positive integer/);
    expect(() => parseStructuredOutputsLimits('{"max_tools": 1.5}')).toThrow(/positive integer/);
    expect(() => parseStructuredOutputsLimits('{"compile_memory_mb": 4096}')).toThrow(/at most 2048/);
    expect(() => parseStructuredOutputsLimits('[1]')).toThrow(/JSON object/);
  });
});
