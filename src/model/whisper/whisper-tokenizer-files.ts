// tokenizer.json / tokenizer_config.json of the built-in Whisper model: the built-in byte-level
// vocabulary (every UTF-8 byte one token, no merges) followed by Whisper's special tokens in
// Whisper's order, so prompts, language detection and timestamps work as with a real checkpoint.

import { byteLevelTokenizerJson } from '../tokenizer/builtin-tokenizer';
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
  const specialTokens = whisperSpecialTokenTexts();
  const tokenizerJson = byteLevelTokenizerJson(specialTokens);
  const tokenizerConfig = {
    tokenizer_class: 'WhisperTokenizer',
    bos_token: '<|endoftext|>',
    eos_token: '<|endoftext|>',
    pad_token: '<|endoftext|>',
    unk_token: '<|endoftext|>',
    add_bos_token: false,
    clean_up_tokenization_spaces: false,
  };
  return { tokenizerJson, tokenizerConfig, vocabSize: 256 + specialTokens.length };
}
