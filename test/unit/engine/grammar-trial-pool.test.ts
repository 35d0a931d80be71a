// The compile-trial pool on a toy vocabulary: refusals keep xgrammar's reason, traps and budget
// overruns are clean 400s with nothing of xgrammar's internals, and the pool keeps compiling
// afterwards (the trapped worker is replaced, never reused).

import { RequestValidationError } from '../../../src/engine/errors';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS, type StructuredOutputsLimits } from '../../../src/engine/structured/grammar-limits';
import { resolveConstraint } from '../../../src/engine/structured/grammar-spec';
import { GrammarTrialPool } from '../../../src/engine/structured/grammar-trial-pool';
import type { StructuredOutputsParams } from '../../../src/engine/types';
import { deepSchema, enumsSchema } from '../../helpers/hostile-schemas';

const VOCAB = Array.from({ length: 256 }, (_, i) => (i < 2 ? '' : String.fromCharCode(32 + (i % 95)) + (i >= 97 ? String.fromCharCode(97 + (i % 26)) : '')));
const INTERNALS = /memory access|Aborted|\.cc:|Check failed|RuntimeError|null function/;

function pool(overrides: Partial<StructuredOutputsLimits> = {}): GrammarTrialPool {
  return GrammarTrialPool.create(VOCAB, [1], { ...DEFAULT_STRUCTURED_OUTPUTS_LIMITS, compileWorkers: 1, ...overrides });
}

const check = (p: GrammarTrialPool, so: StructuredOutputsParams) => p.check(resolveConstraint(so)).done;

async function refusal(p: GrammarTrialPool, so: StructuredOutputsParams): Promise<RequestValidationError> {
  const err = await check(p, so).then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(RequestValidationError);
  return err as RequestValidationError;
}

describe('GrammarTrialPool', () => {
  const pools: GrammarTrialPool[] = [];
  const make = (overrides?: Partial<StructuredOutputsLimits>) => {
    const p = pool(overrides);
    pools.push(p);
    return p;
  };
  afterAll(() => Promise.all(pools.map((p) => p.close())));

  it("passes good specs and refuses bad ones with xgrammar's reason", async () => {
    const p = make();
    await check(p, { regex: '[b-z]{2}' });
    const err = await refusal(p, { json: { type: 'objectx' } });
    expect(err.message).toMatch(/Invalid JSON schema: Unsupported type "objectx"/);
    expect(err.param).toBe('structured_outputs.json');
    await check(p, { choice: ['yes', 'no'] });
  });

  it('a spec that traps xgrammar is a clean refusal, and the next specs compile (5 times over)', async () => {
    const p = make();
    for (let i = 0; i < 5; i++) {
      const err = await refusal(p, { json: deepSchema(60 + i) });
      expect(err.message).toMatch(/could not be compiled/);
      expect(err.message).not.toMatch(INTERNALS);
      await check(p, { regex: `[b-z]{${2 + i}}` });
    }
  }, 60_000);

  it('a compile over its time budget is stopped and refused', async () => {
    const p = make({ compileTimeoutSeconds: 0.001 });
    const err = await refusal(p, { json: enumsSchema(10, 300, 'slow') });
    expect(err.message).toMatch(/took longer than/);
  }, 30_000);

  it('a compile over its memory budget is refused', async () => {
    const p = make({ compileMemoryMb: 1 });
    const err = await refusal(p, { json: enumsSchema(10, 3000, 'big') });
    expect(err.message).toMatch(/could not be compiled/);
    expect(err.message).not.toMatch(INTERNALS);
  }, 30_000);

  it('a cancelled trial stops; another waiter of the same spec keeps it', async () => {
    const p = make();
    const spec = resolveConstraint({ json: enumsSchema(10, 300, 'shared') });
    const first = p.check(spec);
    const second = p.check(spec);
    first.cancel();
    await expect(first.done).rejects.toThrow(/cancelled/);
    await second.done;
    const alone = p.check(resolveConstraint({ json: enumsSchema(10, 300, 'alone') }));
    alone.cancel();
    await expect(alone.done).rejects.toThrow(/cancelled/);
    await check(p, { regex: 'after-cancel' });
  }, 30_000);
});
