// The greedy sampler's argmax: the native AVX2 loop (native/src/argmax.cc) against the JS loop it
// replaces, on rows built to hit its edges (ties, NaN, infinities, signed zeros, lengths that are
// not a multiple of its vector width, rows inside a larger array), and the sampler's greedy path
// (no copy of the logits) giving the same tokens as the path through the processors.
import { argmax, argmaxJs, NATIVE_FROM } from '../../../src/engine/sampling/argmax';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import { SequenceSampler } from '../../../src/engine/sampling/sequence-sampler';
import { SamplingWorkspace } from '../../../src/engine/sampling/workspace';
import { defaultSamplingParams } from '../../../src/engine/sampling-params';
import { NATIVE_ADDON } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';

function seeded(n: number, seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s / 2 ** 32) * 20 - 10;
  });
}

/** Rows whose argmax the two loops could disagree on, each `n` long. */
function edgeRows(n: number): Array<[string, Float32Array]> {
  const rows: Array<[string, Float32Array]> = [];
  const random = seeded(n, n);
  rows.push(['random', random]);
  const tie = seeded(n, 7 * n);
  tie[n - 1] = 50;
  tie[Math.floor(n / 3)] = 50;
  tie[Math.floor(n / 2)] = 50;
  rows.push(['a tie: the first of three maxima', tie]);
  const lastOnly = seeded(n, 11 * n);
  lastOnly[n - 1] = 99;
  rows.push(['the maximum in the tail', lastOnly]);
  const nanFirst = seeded(n, 13 * n);
  nanFirst[0] = NaN;
  nanFirst[5] = 99;
  rows.push(['NaN first (stays chosen)', nanFirst]);
  const nans = seeded(n, 17 * n);
  for (let i = 3; i < n; i += 7) nans[i] = NaN;
  rows.push(['NaN scattered (never chosen)', nans]);
  rows.push(['all -Infinity', new Float32Array(n).fill(-Infinity)]);
  const banned = new Float32Array(n).fill(-Infinity);
  banned[n - 2] = -3;
  rows.push(['every token banned but one', banned]);
  const inf = seeded(n, 19 * n);
  inf[9] = Infinity;
  inf[n - 3] = Infinity;
  rows.push(['+Infinity twice', inf]);
  const zeros = new Float32Array(n).fill(-1);
  zeros[4] = -0;
  zeros[12] = 0;
  rows.push(['-0 before +0', zeros]);
  rows.push(['all equal', new Float32Array(n).fill(2.5)]);
  return rows;
}

const native = nativeKernels();

needs(NATIVE_ADDON).describe('native argmax', () => {
  it.each([1, 7, 8, 15, 16, 17, 31, 1000, 1024, 1031, 32000])('matches the JS loop on every edge row, length %i', (n) => {
    for (const [what, row] of edgeRows(n)) {
      expect([what, native!.argmax(row, 0, n)]).toEqual([what, argmaxJs(row, 0, n)]);
    }
  });

  it('reads the row at its offset inside a larger array', () => {
    const vocab = 1037;
    const rows = seeded(vocab * 5, 3);
    for (let r = 0; r < 5; r++) rows[r * vocab + ((r * 211) % vocab)] = 100 + r;
    for (let r = 0; r < 5; r++) {
      expect(native!.argmax(rows, r * vocab, vocab)).toBe((r * 211) % vocab);
      expect(argmax(rows, r * vocab, vocab)).toBe((r * 211) % vocab);
    }
  });

  it('refuses a range outside the array and a wrong type', () => {
    const row = new Float32Array(16);
    expect(() => native!.argmax(row, 10, 7)).toThrow(/non-empty range/);
    expect(() => native!.argmax(row, 0, 0)).toThrow(/non-empty range/);
    expect(() => native!.argmax(new Float64Array(16) as unknown as Float32Array, 0, 16)).toThrow(/Float32Array/);
  });
});

describe('argmax (the sampler entry point)', () => {
  it.each([5, NATIVE_FROM - 1, NATIVE_FROM, 32000])('gives the JS loop\'s index at length %i', (n) => {
    for (const [what, row] of edgeRows(n)) expect([what, argmax(row, 0, n)]).toEqual([what, argmaxJs(row, 0, n)]);
  });
});

describe('greedy sampling without processors', () => {
  const vocab = 4096;
  const sampler = (extra: Partial<ReturnType<typeof defaultSamplingParams>>) =>
    new SequenceSampler({ params: { ...defaultSamplingParams(), temperature: 0, ...extra }, promptTokenIds: [1, 2, 3], vocabSize: vocab, eosTokenIds: [2] });

  it('picks the same tokens as the processor path and leaves the logits untouched', () => {
    const ws = new SamplingWorkspace(vocab);
    const logits = seeded(vocab * 3, 29);
    logits[vocab + 77] = 40;
    const before = logits.slice();
    const fast = sampler({});
    // logit_bias of 0 on one token: a processor that changes nothing, so the copy-and-process path runs.
    const processed = sampler({ logit_bias: { 5: 0 } });
    for (let r = 0; r < 3; r++) {
      const a = fast.sample(logits, r * vocab, ws);
      const b = processed.sample(logits, r * vocab, ws);
      expect(a.tokenId).toBe(b.tokenId);
      expect(a.tokenId).toBe(argmaxJs(logits, r * vocab, vocab));
    }
    expect(fast.outputTokenIds[1]).toBe(77);
    expect(logits).toEqual(before);
  });

  it('still applies penalties and processors when there are any', () => {
    const ws = new SamplingWorkspace(vocab);
    const logits = seeded(vocab, 31);
    logits[9] = 30;
    logits[10] = 29;
    expect(sampler({}).sample(logits, 0, ws).tokenId).toBe(9);
    expect(sampler({ logit_bias: { 9: -100 } }).sample(logits, 0, ws).tokenId).toBe(10);
  });
});
