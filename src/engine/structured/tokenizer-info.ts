// The vocabulary as xgrammar needs it, built once per model: each token's exact bytes.
//
// Every token is handed over in the GPT-2 byte-level spelling (one code point per byte) with
// vocab type "byte_level", whatever the model's own tokenizer family: SentencePiece byte
// fallback (<0xE2>), Metaspace '▁', byte-level BPE and plain vocabularies all reduce to the bytes
// Tokenizer.tokenBytes() already gives. Tokens that are not valid UTF-8 on their own (one byte
// of a multi-byte character) keep their bytes, which a JS string could not hold. Special
// tokens and the padding rows beyond the tokenizer's vocabulary are given as empty strings,
// which xgrammar treats as special: never allowed, except the stop tokens at a complete parse.

import { BYTE_TO_CHAR } from '../../model/tokenizer/byte-level';
import type { Tokenizer } from '../../model/types';
import type { TokenizerInfo, Xgrammar } from './xgrammar';

/** Token id → byte-level string (empty for special and out-of-tokenizer ids). */
export function byteLevelVocab(tokenizer: Tokenizer, vocabSize: number): string[] {
  const vocab = new Array<string>(vocabSize);
  for (let id = 0; id < vocabSize; id++) {
    if (id >= tokenizer.vocabSize || tokenizer.isSpecial(id)) {
      vocab[id] = '';
      continue;
    }
    let text = '';
    for (const byte of tokenizer.tokenBytes(id)) text += BYTE_TO_CHAR[byte];
    vocab[id] = text;
  }
  return vocab;
}

/** xgrammar's TokenizerInfo from byteLevelVocab() (its length = the logits width); stop tokens = the model's EOS ids. */
export function buildTokenizerInfo(xg: Xgrammar, vocab: string[], eosTokenIds: readonly number[]): Promise<TokenizerInfo> {
  return xg.lib.TokenizerInfo.createTokenizerInfo(vocab, 'byte_level', false, vocab.length, [...eosTokenIds]);
}
