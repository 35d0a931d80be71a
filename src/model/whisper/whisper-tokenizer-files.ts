// tokenizer.json / tokenizer_config.json of the built-in Whisper model: the built-in byte-level
// vocabulary (every UTF-8 byte one token, no merges) followed by Whisper's special tokens in
// Whisper's order, so prompts, language detection and timestamps work as with a real checkpoint.

import { BYTE_TO_CHAR } from '../tokenizer/byte-level';
import { WHISPER_LANGUAGES } from './whisper-languages';

/** Whisper's special tokens after the vocabulary, in id order. */
export function whisperSpecialTokenTexts(): string[] {
  const timestamps = Array.from({ length: 1501 }, (_, i) => `<|${(i * 0.02).toFixed(2)}|>`);
  return [
    '<|endoftext|>',
    '<|startoftranscript|>',
    ...WHISPER_LANGUAGES.map(([code]) => `<|${code}|>`),
    '<|translate|>',
    '<|transcribe|>',
    '<|startoflm|>',
    '<|startofprev|>',
    '<|nospeech|>',
    '<|notimestamps|>',
    ...timestamps,
  ];
}

export function whisperTokenizerFiles(): { tokenizerJson: object; tokenizerConfig: object; vocabSize: number } {
  const vocab: Record<string, number> = {};
  BYTE_TO_CHAR.forEach((ch, byte) => (vocab[ch] = byte));
  const added = whisperSpecialTokenTexts().map((content, i) => {
    vocab[content] = 256 + i;
    return { id: 256 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
  });
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson = {
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
  const tokenizerConfig = {
    tokenizer_class: 'WhisperTokenizer',
    bos_token: '<|endoftext|>',
    eos_token: '<|endoftext|>',
    pad_token: '<|endoftext|>',
    unk_token: '<|endoftext|>',
    add_bos_token: false,
    clean_up_tokenization_spaces: false,
  };
  return { tokenizerJson, tokenizerConfig, vocabSize: 256 + added.length };
}
