// The dummy model's tokenizer: needs no files. A byte-level vocabulary (ids 0-255 are the bytes,
// in GPT-2's byte-to-character alphabet) with no merges, so every UTF-8 byte is one token, plus
// the special tokens the built-in ChatML-style template uses. Served through the same
// tokenizer.json code path as real models, so encode/decode/tokenBytes behave identically.

import type { Tokenizer } from '../types';
import { BYTE_TO_CHAR } from './byte-level';
import { createTokenizerFromHfFiles } from './hf-tokenizer';

/** Special tokens after the 256 byte tokens, in id order (ids 256, 257, …). */
export const BUILTIN_SPECIAL_TOKENS = ['<s>', '</s>', '<pad>', '<|im_start|>', '<|im_end|>'] as const;

/**
 * tokenizer.json of a byte-level vocabulary with no merges (ids 0-255 are the bytes) followed by
 * `specialTokens` (ids 256, 257, …).
 */
export function byteLevelTokenizerJson(specialTokens: readonly string[]): object {
  const vocab: Record<string, number> = {};
  BYTE_TO_CHAR.forEach((ch, byte) => (vocab[ch] = byte));
  const added = specialTokens.map((content, i) => {
    vocab[content] = 256 + i;
    return { id: 256 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
  });
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: byteLevel,
    decoder: byteLevel,
    model: { type: 'BPE', dropout: null, unk_token: null, fuse_unk: false, byte_fallback: false, vocab, merges: [] },
  };
}

export function builtinTokenizerFiles(): { tokenizerJson: object; tokenizerConfig: object } {
  const tokenizerJson = byteLevelTokenizerJson(BUILTIN_SPECIAL_TOKENS);
  const tokenizerConfig = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: '<s>',
    eos_token: '<|im_end|>',
    pad_token: '<pad>',
    additional_special_tokens: ['</s>', '<|im_start|>'],
    add_bos_token: false,
    clean_up_tokenization_spaces: false,
  };
  return { tokenizerJson, tokenizerConfig };
}

/** The built-in byte-level tokenizer of the dummy model (vocabSize 261, EOS '<|im_end|>'). */
export function createBuiltinTokenizer(): Tokenizer {
  const { tokenizerJson, tokenizerConfig } = builtinTokenizerFiles();
  return createTokenizerFromHfFiles(tokenizerJson, tokenizerConfig);
}
