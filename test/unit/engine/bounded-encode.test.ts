// Tokenizing with a limit: a prefix cut before a space between letters gives the full text's first
// tokens (so its count is a lower bound), a text past the limit is refused from such a prefix, and
// one under it gets exactly the ids of a plain encode.

import { gguf } from '@huggingface/gguf';
import { PromptTooLongError } from '../../../src/engine/errors';
import { encodeWithin, wordBoundaryBefore } from '../../../src/engine/text/bounded-encode';
import { createTokenizerFromGguf, createTokenizerFromHfFiles } from '../../../src/model/tokenizer';
import type { Tokenizer } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { bertTokenizerFiles, xlmrTokenizerFiles } from '../../helpers/test-tokenizers';

const STORIES = sharedModel('stories260K.gguf');
const TEXT = 'Once upon a time, the quick brown fox jumped over the lazy dog.\nIt was  running; what is a panda? Paris, France! ';

describe('wordBoundaryBefore', () => {
  it('finds the last space between two letters in the second half of the range', () => {
    expect(wordBoundaryBefore('ab cd ef', 8)).toBe(5);
    expect(wordBoundaryBefore('ab, cd', 6)).toBe(-1);
    expect(wordBoundaryBefore('a'.repeat(100), 100)).toBe(-1);
    expect(wordBoundaryBefore('ab éé üü', 8)).toBe(5);
  });
});

describe('encodeWithin', () => {
  const tokenizers: Array<[string, () => Promise<Tokenizer>]> = [
    ['WordPiece', async () => createTokenizerFromHfFiles(bertTokenizerFiles().tokenizerJson, bertTokenizerFiles().tokenizerConfig)],
    ['Unigram', async () => createTokenizerFromHfFiles(xlmrTokenizerFiles().tokenizerJson, xlmrTokenizerFiles().tokenizerConfig)],
  ];
  if (needs(STORIES).present) {
    tokenizers.push(['SentencePiece BPE (stories260K)', async () => createTokenizerFromGguf((await gguf(STORIES, { allowLocalFile: true })).metadata as Record<string, unknown>)]);
  }

  it.each(tokenizers)('%s: a prefix cut at a word boundary tokenizes to the start of the full text', async (_name, make) => {
    const tokenizer = await make();
    const text = TEXT.repeat(20);
    const full = tokenizer.encode(text, { addSpecialTokens: false });
    for (let end = 10; end < text.length; end += 37) {
      const cut = wordBoundaryBefore(text, end);
      if (cut <= 0) continue;
      const prefix = tokenizer.encode(text.slice(0, cut), { addSpecialTokens: false });
      expect(full.slice(0, prefix.length)).toEqual(prefix);
    }
  });

  it.each(tokenizers)('%s: refuses a text past the limit early and encodes one under it exactly', async (_name, make) => {
    const tokenizer = await make();
    const long = TEXT.repeat(300);
    let refused: unknown;
    try {
      encodeWithin(tokenizer, long, true, 64);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(PromptTooLongError);
    expect((refused as PromptTooLongError).atLeast).toBeGreaterThanOrEqual(64);
    expect((refused as PromptTooLongError).atLeast).toBeLessThan(tokenizer.encode(long, { addSpecialTokens: true }).length);
    const short = TEXT.repeat(3);
    expect(encodeWithin(tokenizer, short, true, 100_000)).toEqual(tokenizer.encode(short, { addSpecialTokens: true }));
    expect(encodeWithin(tokenizer, long, true, null)).toEqual(tokenizer.encode(long, { addSpecialTokens: true }));
  });
});
