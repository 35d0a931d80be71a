// The grammar's side of speculative decoding, without a model: a mask request with drafts fills
// one mask per position the walk may sample (up to the first draft the grammar rejects or that
// ends it), apply() reads the position of the tokens accepted since prepare(), and the matcher is
// rolled back so that the next request accepts the tokens really kept. Both the worker thread's
// constraints (GrammarClient) and the in-thread GrammarConstraint behave the same.

import { GrammarClient } from '../../../../src/engine/structured/grammar-client';
import { StructuredOutputCompiler } from '../../../../src/engine/structured/grammar-compiler';
import { resolveConstraint } from '../../../../src/engine/structured/grammar-spec';
import type { SequenceConstraint } from '../../../../src/engine/sampling/logits-processor';
import type { StructuredOutputsParams } from '../../../../src/engine/types';

const STOP = 1;
/** Two special tokens, then one token per printable ASCII character. */
const VOCAB = Array.from({ length: 97 }, (_, i) => (i < 2 ? '' : String.fromCharCode(30 + i)));
const tok = (ch: string) => VOCAB.indexOf(ch);
const chars = (text: string) => [...text].map(tok);

/** What both kinds of constraint offer. */
type Constraint = SequenceConstraint & { accept(tokenId: number): void; readonly draftsTaken: number };

/** The tokens the constraint's mask for its current position allows. */
function allowed(constraint: Constraint): number[] {
  const scores = new Float32Array(VOCAB.length);
  constraint.apply(scores, []);
  return [...scores.keys()].filter((id) => scores[id] === 0);
}

type Make = (so: StructuredOutputsParams, enabled?: boolean) => Promise<Constraint>;

interface Backend {
  make: Make;
  close: () => Promise<void>;
}

const backends: Array<[string, () => Promise<Backend>]> = [
  [
    'grammar worker (RemoteConstraint)',
    async () => {
      const client = await GrammarClient.start(VOCAB, [STOP]);
      let n = 0;
      const make: Make = async (so, enabled = true) => (await client.compile(`r${n++}`, resolveConstraint(so), 1, enabled))[0];
      return { make, close: () => client.close() };
    },
  ],
  [
    'in-thread GrammarConstraint',
    async () => {
      const compiler = await StructuredOutputCompiler.fromVocab(VOCAB, [STOP]);
      const make: Make = (so, enabled = true) => compiler.createConstraint(compiler.compile(resolveConstraint(so)), enabled);
      return { make, close: () => Promise.resolve() };
    },
  ],
];

describe.each(backends)('masks for drafted positions: %s', (_name, start) => {
  let backend: Backend;
  const make: Make = (so, enabled) => backend.make(so, enabled);
  beforeAll(async () => {
    backend = await start();
  });
  afterAll(() => backend.close());

  it('one mask per position up to the first draft the grammar rejects; then rolled back to the kept tokens', async () => {
    const c = await make({ regex: 'abc[0-9]d' });
    await c.prepare(chars('abxc'));
    expect(c.draftsTaken).toBe(2);
    expect(allowed(c)).toEqual(chars('a'));
    c.accept(tok('a'));
    expect(allowed(c)).toEqual(chars('b'));
    c.accept(tok('b'));
    expect(allowed(c)).toEqual(chars('c'));
    // 'x' is not in the language: the walk can never be past it, and there is no mask there.
    c.accept(tok('c')); // the token kept in place of 'x'
    expect(() => allowed(c)).toThrow(/no grammar mask prepared for this position/);
    // The matcher stands after "abc" (the kept tokens), not after the drafts it tried.
    await c.prepare();
    expect(allowed(c)).toEqual(chars('0123456789'));
    c.accept(tok('7'));
    await c.prepare(chars('d'));
    expect(allowed(c)).toEqual(chars('d'));
    c.accept(tok('d'));
    expect(allowed(c)).toEqual([STOP]);
    c.accept(STOP);
    expect(c.terminated).toBe(true);
    c.dispose();
  });

  it('drafts rejected by verification after the grammar took them: the next masks follow the replacement', async () => {
    const c = await make({ choice: ['cat', 'cow', 'dog'] });
    await c.prepare(chars('cat'));
    expect(c.draftsTaken).toBe(3);
    expect(allowed(c).sort()).toEqual(chars('cd').sort());
    c.accept(tok('c'));
    expect(allowed(c).sort()).toEqual(chars('ao').sort());
    c.accept(tok('o')); // the target kept 'o', not the drafted 'a'
    await c.prepare(chars('w'));
    expect(allowed(c)).toEqual(chars('w'));
    c.accept(tok('w'));
    expect(allowed(c)).toEqual([STOP]);
    c.dispose();
  });

  it('a drafted stop token ends the masks: no position after it', async () => {
    const c = await make({ regex: 'ab' });
    await c.prepare([tok('a'), tok('b'), STOP, tok('a')]);
    expect(c.draftsTaken).toBe(3); // the stop token is in the language; nothing after it
    c.accept(tok('a'));
    c.accept(tok('b'));
    expect(allowed(c)).toEqual([STOP]);
    // Say the target kept something else than the drafted stop (it cannot here: a test of the masks).
    c.accept(STOP);
    expect(c.terminated).toBe(true);
    c.dispose();
    const d = await make({ regex: 'ab' });
    await d.prepare([tok('a'), tok('b'), STOP, tok('a')]);
    d.accept(tok('a'));
    await d.prepare(); // one token kept: the matcher is after "a", not terminated
    expect(d.terminated).toBe(false);
    expect(allowed(d)).toEqual(chars('b'));
    d.dispose();
  });

  it('several constraints in one request, with different numbers of drafts, each read their own masks', async () => {
    const a = await make({ regex: '[0-9]+' });
    const b = await make({ regex: 'xyz' });
    const c = await make({ regex: '(ab)+' });
    await Promise.all([a.prepare(chars('12')), b.prepare(), c.prepare(chars('aba'))]);
    expect([a.draftsTaken, b.draftsTaken, c.draftsTaken]).toEqual([2, 0, 3]);
    expect(allowed(a)).toEqual(chars('0123456789'));
    expect(allowed(b)).toEqual(chars('x'));
    expect(allowed(c)).toEqual(chars('a'));
    a.accept(tok('1'));
    b.accept(tok('x'));
    c.accept(tok('a'));
    expect(allowed(a)).toEqual([STOP, ...chars('0123456789')]);
    expect(() => allowed(b)).toThrow(/no grammar mask prepared for this position/);
    expect(allowed(c)).toEqual(chars('b'));
    c.accept(tok('b'));
    expect(allowed(c)).toEqual([STOP, tok('a')]);
    c.accept(tok('a'));
    expect(allowed(c)).toEqual(chars('b'));
    await Promise.all([a.prepare(), b.prepare(chars('z')), c.prepare()]);
    expect(b.draftsTaken).toBe(0);
    expect(allowed(a)).toEqual([STOP, ...chars('0123456789')]);
    expect(allowed(b)).toEqual(chars('y'));
    expect(allowed(c)).toEqual(chars('b'));
    for (const x of [a, b, c]) x.dispose();
  });

  it('a disabled constraint masks nothing with or without drafts, and starts from the tokens after enable()', async () => {
    const c = await make({ regex: 'ok' }, false);
    await c.prepare(chars('zz'));
    expect(allowed(c)).toHaveLength(VOCAB.length);
    c.accept(tok('z'));
    c.enable();
    await c.prepare(chars('ok'));
    expect(allowed(c)).toEqual(chars('o'));
    c.accept(tok('o'));
    expect(allowed(c)).toEqual(chars('k'));
    c.dispose();
  });
});
