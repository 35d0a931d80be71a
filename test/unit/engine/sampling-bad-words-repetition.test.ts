import { gguf } from '@huggingface/gguf';
import { RequestValidationError } from '../../../src/engine/errors';
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';
import { detectRepetition, encodeBadWords, SamplingWorkspace, SequenceSampler } from '../../../src/engine/sampling';
import { createTokenizerFromGguf } from '../../../src/model/tokenizer';
import type { Tokenizer } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

/** A GPT-2-like fake: words with and without a leading space are different single tokens. */
function fakeTokenizer(map: Record<string, number[]>, vocabSize = 50): Tokenizer {
  return {
    vocabSize,
    bosTokenId: null,
    eosTokenId: null,
    padTokenId: null,
    bosToken: null,
    eosToken: null,
    encode: (text: string) => map[text] ?? [],
    decode: () => '',
    tokenBytes: () => new Uint8Array(),
    idToToken: () => undefined,
    isSpecial: () => false,
  };
}

describe('encodeBadWords', () => {
  it('adds the leading-space form when it is a different token sequence of the same length', () => {
    const tok = fakeTokenizer({ hello: [10], ' hello': [20], 'big dog': [3, 4], ' big dog': [5, 4] });
    expect(encodeBadWords(['hello', ' big dog'], tok)).toEqual([[10], [20], [3, 4], [5, 4]]);
  });

  it('drops a spaced form of another length or with the same first token', () => {
    const tok = fakeTokenizer({ cat: [7], ' cat': [1, 7], dog: [8, 9], ' dog': [8, 2] });
    expect(encodeBadWords(['cat', 'dog'], tok)).toEqual([[7], [8, 9]]);
  });

  it('rejects words that encode to nothing, and out-of-vocab ids', () => {
    expect(() => encodeBadWords(['zzz'], fakeTokenizer({}))).toThrow(RequestValidationError);
    expect(() => encodeBadWords(['big'], fakeTokenizer({ big: [99] }))).toThrow(/model vocabulary size is 50/);
  });

  const path = sharedModel('stories260K.gguf');
  needs(path).it('bans a word of stories260K: only its last token, only after its prefix', async () => {
    const tok = createTokenizerFromGguf((await gguf(path, { allowLocalFile: true })).metadata as Record<string, unknown>);
    const girl = tok.encode('girl', { addSpecialTokens: false }); // ▁g ir l
    expect(girl.length).toBe(3);
    const seqs = encodeBadWords(['girl'], tok);
    expect(seqs[0]).toEqual(girl);
    const V = tok.vocabSize;
    const ws = new SamplingWorkspace(V);
    const s = new SequenceSampler({
      params: normalizeSamplingParams({ temperature: 0, bad_words: ['girl'] }),
      promptTokenIds: [1],
      vocabSize: V,
      eosTokenIds: [2],
      badWordsTokenIds: seqs,
    });
    const prefer = (id: number, second: number) => {
      const l = new Float32Array(V);
      l[id] = 5;
      l[second] = 4;
      return l;
    };
    expect(s.sample(prefer(girl[0], 0), 0, ws).tokenId).toBe(girl[0]);
    expect(s.sample(prefer(girl[1], 0), 0, ws).tokenId).toBe(girl[1]);
    expect(s.sample(prefer(girl[2], 7), 0, ws).tokenId).toBe(7); // 'l' banned after '▁g ir'
    expect(s.sample(prefer(girl[2], 7), 0, ws).tokenId).toBe(girl[2]); // allowed elsewhere
  });
});

describe('detectRepetition', () => {
  const params = (max: number, min: number, count: number) => ({ max_pattern_size: max, min_pattern_size: min, min_count: count });

  it('finds an n-gram repeated min_count times at the end', () => {
    expect(detectRepetition([9, 1, 2, 3, 1, 2, 3], params(3, 1, 2))).toBe(true);
    expect(detectRepetition([1, 2, 3, 1, 2, 3], params(3, 1, 3))).toBe(false);
    expect(detectRepetition([1, 2, 3, 1, 2, 3, 1, 2, 3], params(3, 1, 3))).toBe(true);
    expect(detectRepetition([4, 4, 4], params(1, 1, 3))).toBe(true);
    expect(detectRepetition([4, 4, 5], params(2, 1, 2))).toBe(false);
  });

  it('only at the end of the output, and only for sizes in [min, max]', () => {
    expect(detectRepetition([1, 2, 1, 2, 7], params(2, 1, 2))).toBe(false);
    expect(detectRepetition([1, 2, 1, 2], params(1, 1, 2))).toBe(false);
    expect(detectRepetition([5, 5, 5, 5], params(3, 2, 2))).toBe(true); // [5,5] twice
    expect(detectRepetition([1, 2, 3, 1, 2, 3], params(4, 4, 2))).toBe(false);
  });

  it('is disabled by max_pattern_size 0 or min_count < 2; min_pattern_size 0 means 1', () => {
    expect(detectRepetition([3, 3, 3, 3], params(0, 0, 2))).toBe(false);
    expect(detectRepetition([3, 3, 3, 3], params(2, 0, 1))).toBe(false);
    expect(detectRepetition([3, 3], params(2, 0, 2))).toBe(true);
  });
});
