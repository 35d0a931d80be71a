// The matcher worker replaced after it dies: a spec that traps it (sent straight to it here,
// skipping the trial that normally stops such specs) is a clean 400, constraints of the lost
// worker fail at their next mask, and new compiles work on the fresh worker.

import { RequestValidationError } from '../../../src/engine/errors';
import { GrammarClient } from '../../../src/engine/structured/grammar-client';
import { resolveConstraint } from '../../../src/engine/structured/grammar-spec';
import { deepArraySchema } from '../../helpers/hostile-schemas';

const VOCAB = Array.from({ length: 128 }, (_, i) => (i < 2 ? '' : String.fromCharCode(32 + (i % 95))));

describe('GrammarClient after its worker dies', () => {
  let client: GrammarClient;
  beforeAll(async () => {
    client = await GrammarClient.start(VOCAB, [1]);
  });
  afterAll(() => client?.close());

  it('refuses the trapping spec, fails the lost constraints, compiles on a fresh worker (3 times over)', async () => {
    for (let i = 0; i < 3; i++) {
      const [before] = await client.compile(`before${i}`, resolveConstraint({ regex: `[b-z]{${i + 1}}` }), 1);
      await client.requestMask(before);
      const trap = client.compile(`trap${i}`, resolveConstraint({ json: deepArraySchema(100 + i) }), 1);
      await expect(trap).rejects.toBeInstanceOf(RequestValidationError);
      await expect(trap).rejects.toThrow(/could not be compiled/);
      const [after] = await client.compile(`after${i}`, resolveConstraint({ choice: ['yes', 'no'] }), 1);
      await client.requestMask(after);
      await expect(client.requestMask(before)).rejects.toThrow(/replaced/);
      after.dispose();
    }
  }, 60_000);
});
