// The logits-processor seam without a model: registry order, accept() on every sampled token,
// hard processors winning a conflict, and the grammar constraint over a synthetic vocabulary
// with the real xgrammar (disabled → pass-through, enable(), termination, byte-split characters).

import { defaultSamplingParams } from '../../../src/engine/sampling-params';
import { LOGITS_PROCESSORS, SamplingWorkspace, SequenceSampler } from '../../../src/engine/sampling';
import type { LogitsProcessorFactory, SequenceConstraint } from '../../../src/engine/sampling/logits-processor';
import { StructuredOutputCompiler } from '../../../src/engine/structured/grammar-compiler';
import { resolveConstraint } from '../../../src/engine/structured/grammar-spec';
import { byteLevelVocab } from '../../../src/engine/structured/tokenizer-info';
import type { SamplingParams } from '../../../src/engine/types';
import type { Tokenizer } from '../../../src/model/types';

const V = 8;
const EOS = 7;
const ws = new SamplingWorkspace(V);
const params = (p: Partial<SamplingParams> = {}): SamplingParams => ({ ...defaultSamplingParams(), temperature: 0, ...p });
const flat = () => new Float32Array(V).fill(0);

describe('logits-processor registry', () => {
  it('applies processors in registry order and tells each sampled token to accept()', () => {
    const calls: string[] = [];
    const recorder = (name: string, boost: number): LogitsProcessorFactory => ({
      name,
      create: () => ({
        apply(scores, outputs) {
          calls.push(`${name}:${outputs.length}`);
          scores[boost] += 10;
        },
        accept: (id) => calls.push(`${name} accepts ${id}`),
      }),
    });
    const sampler = new SequenceSampler({ params: params(), promptTokenIds: [0], vocabSize: V, eosTokenIds: [EOS], processors: [recorder('a', 2), recorder('b', 3)] });
    const first = sampler.sample(flat(), 0, ws);
    sampler.sample(flat(), 0, ws);
    expect(first.tokenId).toBe(2); // both got +10; argmax takes the first
    expect(calls).toEqual(['a:0', 'b:0', 'a accepts 2', 'b accepts 2', 'a:1', 'b:1', 'a accepts 2', 'b accepts 2']);
  });

  it('the default registry puts structured outputs first, then vLLM v1 order', () => {
    expect(LOGITS_PROCESSORS.map((f) => f.name)).toEqual(['structured_outputs', 'allowed_token_ids', 'bad_words', 'min_tokens', 'logit_bias']);
  });

  it('unused processors are not created (an unconstrained request pays nothing)', () => {
    const created = LOGITS_PROCESSORS.map((f) => f.create({ params: params(), vocabSize: V, eosTokenIds: [EOS] }));
    expect(created).toEqual([null, null, null, null, null]);
  });

  it('a hard constraint wins when the others ban every token it allows (min_tokens vs a finished grammar)', () => {
    const onlyEos: SequenceConstraint = {
      hard: true,
      terminated: false,
      enabled: true,
      enable() {},
      prepare() {},
      apply(scores) {
        for (let i = 0; i < V; i++) if (i !== EOS) scores[i] = -Infinity;
      },
      dispose() {},
    };
    const sampler = new SequenceSampler({ params: params({ min_tokens: 5 }), promptTokenIds: [0], vocabSize: V, eosTokenIds: [EOS], constraint: onlyEos });
    expect(sampler.sample(flat(), 0, ws).tokenId).toBe(EOS);
    // Without the conflict min_tokens still holds EOS back where the constraint allows more.
    const twoWays = { ...onlyEos, apply: (scores: Float32Array) => scores.fill(-Infinity, 0, 3) };
    const s2 = new SequenceSampler({ params: params({ min_tokens: 5 }), promptTokenIds: [0], vocabSize: V, eosTokenIds: [EOS], constraint: twoWays });
    const logits = flat();
    logits[EOS] = 5;
    expect(s2.sample(logits, 0, ws).tokenId).toBe(3);
  });
});

/** A byte-level toy tokenizer: ids 0..5 are the strings below, 6 is <s>, 7 is </s>. */
function toyTokenizer(pieces: Uint8Array[]): Tokenizer {
  return {
    vocabSize: V,
    bosTokenId: 6,
    eosTokenId: EOS,
    padTokenId: null,
    bosToken: '<s>',
    eosToken: '</s>',
    encode: () => [],
    decode: () => '',
    tokenBytes: (id) => pieces[id] ?? new TextEncoder().encode(['<s>', '</s>'][id - 6] ?? ''),
    idToToken: (id) => String(id),
    isSpecial: (id) => id >= 6,
  };
}

describe('grammar constraint over a synthetic vocabulary (real xgrammar)', () => {
  const enc = new TextEncoder();
  // 'a', 'b', '{', '}', and the two bytes of 'é' (0xC3 0xA9) as separate tokens.
  const pieces = [enc.encode('a'), enc.encode('b'), enc.encode('{'), enc.encode('}'), Uint8Array.of(0xc3), Uint8Array.of(0xa9)];
  let compiler: StructuredOutputCompiler;

  beforeAll(async () => {
    compiler = await StructuredOutputCompiler.create(toyTokenizer(pieces), V, [EOS]);
  });

  const allowed = (constraint: SequenceConstraint): number[] => {
    const scores = flat();
    constraint.apply(scores, []);
    return [...scores.keys()].filter((i) => scores[i] === 0);
  };

  it('the vocabulary reaches xgrammar byte-exact: specials are empty, half characters keep their byte', () => {
    const vocab = byteLevelVocab(toyTokenizer(pieces), V);
    expect(vocab.slice(0, 4)).toEqual(['a', 'b', '{', '}']);
    expect(vocab[4]).toHaveLength(1); // one code point standing for byte 0xC3
    expect(vocab.slice(6)).toEqual(['', '']);
  });

  it('masks, advances, ends: a character split over two tokens, then only EOS, then terminated', async () => {
    const constraint = await compiler.createConstraint(compiler.compile(resolveConstraint({ grammar: 'root ::= "a" "é"' })));
    await constraint.prepare();
    expect(allowed(constraint)).toEqual([0]);
    constraint.accept(0);
    await constraint.prepare();
    expect(allowed(constraint)).toEqual([4]);
    constraint.accept(4);
    await constraint.prepare();
    expect(allowed(constraint)).toEqual([5]);
    constraint.accept(5);
    await constraint.prepare();
    expect(allowed(constraint)).toEqual([EOS]);
    expect(constraint.terminated).toBe(false);
    constraint.accept(EOS);
    expect(constraint.terminated).toBe(true);
    constraint.dispose();
  });

  it('refuses a token the grammar does not allow', async () => {
    const constraint = await compiler.createConstraint(compiler.compile(resolveConstraint({ choice: ['ab'] })));
    expect(() => constraint.accept(1)).toThrow(/rejected token 1/);
    constraint.dispose();
  });

  it('disabled (a reasoning section): passes everything through and does not advance; enable() starts constraining', async () => {
    const constraint = await compiler.createConstraint(compiler.compile(resolveConstraint({ regex: 'b+' })), false);
    await constraint.prepare();
    expect(allowed(constraint)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    constraint.accept(2); // '{' while reasoning: not the grammar's business
    expect(constraint.enabled).toBe(false);
    constraint.enable();
    await constraint.prepare();
    expect(allowed(constraint)).toEqual([1]);
    constraint.dispose();
  });

  it('the sampler drives the constraint: prepare → sample → accept, until EOS', async () => {
    const constraint = await compiler.createConstraint(compiler.compile(resolveConstraint({ json: { type: 'object', properties: {}, additionalProperties: false }, disable_any_whitespace: true })));
    const sampler = new SequenceSampler({ params: params({ temperature: 1, seed: 3 }), promptTokenIds: [6], vocabSize: V, eosTokenIds: [EOS], constraint });
    const out: number[] = [];
    while (!constraint.terminated && out.length < 10) {
      await constraint.prepare();
      out.push(sampler.sample(flat(), 0, ws).tokenId);
    }
    expect(out).toEqual([2, 3, EOS]); // {}
  });

  it('caches compiled grammars by spec (LRU) and counts hits, misses and compile time', () => {
    compiler.drainStats();
    const spec = resolveConstraint({ regex: 'a{1,3}' });
    const first = compiler.compile(spec);
    expect(compiler.compile(resolveConstraint({ regex: 'a{1,3}' }))).toBe(first);
    const stats = compiler.drainStats();
    expect([stats.cacheMisses, stats.cacheHits, stats.compileSeconds.length]).toEqual([1, 1, 1]);
  });

  it('evicts the least recently used grammar beyond its size', async () => {
    const small = await StructuredOutputCompiler.create(toyTokenizer(pieces), V, [EOS], 2);
    const [a, b, c] = ['a', 'b', 'ab'].map((regex) => resolveConstraint({ regex }));
    small.compile(a);
    small.compile(b);
    small.compile(a); // a is now the most recent
    small.compile(c); // evicts b
    small.drainStats();
    small.compile(a);
    small.compile(b);
    expect(small.drainStats()).toMatchObject({ cacheHits: 1, cacheMisses: 1 });
    expect(small.cachedGrammars).toBe(2);
  });
});
