// Tokenizing with a limit: a text that is clearly longer than `limit` tokens is refused after
// tokenizing a prefix of it, so an 8 MiB prompt against a 2,048-token context costs a few
// milliseconds instead of seconds of CPU and a gigabyte of token arrays.
//
// The prefix ends just before a space between two letters. Every tokenizer family served here
// splits words there before anything merges (byte-level BPE regexes attach the space to the next
// word, SentencePiece starts a word at '▁', WordPiece splits on whitespace), so the prefix's
// tokens are the full text's first tokens and their count is a lower bound. MARGIN absorbs an
// added token or merge that could straddle the cut. A text with no such space is tokenized whole.

import { PromptTooLongError } from '../errors';
import type { Tokenizer } from '../../model/types';

/** Tokens of slack for whatever could join across the cut. */
const MARGIN = 16;
/** The first prefix holds this many characters per token of the limit; later ones grow by GROWTH. */
const FIRST_PREFIX_CHARS_PER_TOKEN = 4;
const GROWTH = 4;

const ASCII_LETTER = /[A-Za-z]/;
const LETTER = /\p{L}/u;

function isLetter(ch: string | undefined): boolean {
  return ch !== undefined && (ASCII_LETTER.test(ch) || LETTER.test(ch));
}

/** The last index in [end / 2, end) holding a space between two letters, or -1. */
export function wordBoundaryBefore(text: string, end: number): number {
  for (let i = Math.min(end, text.length - 1) - 1; i >= end / 2; i--) {
    if (text.charCodeAt(i) === 32 && isLetter(text[i - 1]) && isLetter(text[i + 1])) return i;
  }
  return -1;
}

/**
 * The text's token ids; with a limit, throws PromptTooLongError (before tokenizing it all) when
 * a prefix alone already has `limit` tokens or more.
 */
export function encodeWithin(tokenizer: Tokenizer, text: string, addSpecialTokens: boolean, limit: number | null | undefined): number[] {
  if (limit != null) {
    for (let size = (limit + MARGIN) * FIRST_PREFIX_CHARS_PER_TOKEN; size * 2 <= text.length; size *= GROWTH) {
      const cut = wordBoundaryBefore(text, size);
      if (cut <= 0) continue;
      const atLeast = tokenizer.encode(text.slice(0, cut), { addSpecialTokens }).length - MARGIN;
      if (atLeast >= limit) throw new PromptTooLongError(atLeast);
    }
  }
  return tokenizer.encode(text, { addSpecialTokens });
}
