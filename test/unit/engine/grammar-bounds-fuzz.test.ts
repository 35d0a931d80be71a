// Generated schemas placed at the default --structured-outputs-limits: every one within the
// nesting and `$ref` bounds compiles in a trial worker without a trap or a budget overrun (the
// defaults are safe), and one level past a bound is refused before xgrammar sees it.

import fc from 'fast-check';
import { RequestValidationError } from '../../../src/engine/errors';
import { checkGrammarBounds } from '../../../src/engine/structured/grammar-bounds';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS as LIMITS } from '../../../src/engine/structured/grammar-limits';
import { resolveConstraint } from '../../../src/engine/structured/grammar-spec';
import { GrammarTrialPool } from '../../../src/engine/structured/grammar-trial-pool';
import { behindRefs, jsonSchemaArbitrary, nestedIn } from '../../helpers/json-schema-arbitrary';

const VOCAB = Array.from({ length: 256 }, (_, i) => (i < 2 ? '' : String.fromCharCode(32 + (i % 95)) + (i >= 97 ? String.fromCharCode(97 + (i % 26)) : '')));
const INNER_DEPTH = 4;

describe('schemas generated to the default bounds', () => {
  let pool: GrammarTrialPool;
  beforeAll(() => {
    pool = GrammarTrialPool.create(VOCAB, [1], { ...LIMITS, compileWorkers: 1 });
  });
  afterAll(() => pool?.close());

  it('within the bounds: compiled, or refused with a reason, never a trap', async () => {
    let compiled = 0;
    await fc.assert(
      fc.asyncProperty(jsonSchemaArbitrary(INNER_DEPTH), fc.integer({ min: 0, max: LIMITS.maxNestingDepth - INNER_DEPTH }), fc.integer({ min: 0, max: LIMITS.maxRefDepth }), async (inner, wrap, refs) => {
        const so = { json: behindRefs(nestedIn(inner, wrap), refs) };
        const spec = resolveConstraint(so);
        checkGrammarBounds(so, spec, LIMITS);
        const outcome = await pool.check(spec).done.then(() => null, (err: unknown) => err);
        if (outcome === null) {
          compiled++;
          return;
        }
        expect(outcome).toBeInstanceOf(RequestValidationError);
        expect((outcome as Error).message).not.toMatch(/could not be compiled/);
      }),
      { seed: 20261205, numRuns: 25 },
    );
    expect(compiled).toBeGreaterThan(20);
  }, 120_000);

  it('one past a bound: refused before compiling', () => {
    fc.assert(
      fc.property(jsonSchemaArbitrary(1), (inner) => {
        for (const so of [{ json: nestedIn(inner, LIMITS.maxNestingDepth + 1) }, { json: behindRefs(inner, LIMITS.maxRefDepth + 1) }]) {
          expect(() => checkGrammarBounds(so, resolveConstraint(so), LIMITS)).toThrow(/--structured-outputs-limits max_(nesting|ref)_depth/);
        }
      }),
      { seed: 20261205, numRuns: 25 },
    );
  });
});
