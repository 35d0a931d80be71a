// Whisper's special tokens, looked up in the model's tokenizer by their text: the task prompt
// (<|startoftranscript|><|en|><|transcribe|><|notimestamps|>), previous-text conditioning
// (<|startofprev|>), the language tokens (language detection samples among them) and the
// timestamp tokens (<|0.00|> .. <|30.00|>, 0.02 s apart).

import type { Tokenizer } from '../types';
import { WHISPER_LANGUAGES } from './whisper-languages';

export interface WhisperSpecialTokens {
  endOfText: number;
  startOfTranscript: number;
  /** null for English-only checkpoints (their prompt has no language and task tokens). */
  translate: number | null;
  transcribe: number | null;
  startOfPrev: number | null;
  noTimestamps: number;
  /** <|0.00|>; timestamp t seconds is this id + round(t / 0.02). null when the vocabulary has none. */
  timestampBegin: number | null;
  /** Language code -> token id, in Whisper's order (empty for English-only checkpoints). */
  languages: Map<string, number>;
}

/** Seconds per timestamp token step. */
export const TIMESTAMP_SECONDS = 0.02;

/** The id of a token given its exact text, or null. */
export function tokenIdOf(tokenizer: Tokenizer, text: string): number | null {
  const ids = tokenizer.encode(text, { addSpecialTokens: false });
  return ids.length === 1 && tokenizer.idToToken(ids[0]) === text ? ids[0] : null;
}

export function whisperSpecialTokens(tokenizer: Tokenizer): WhisperSpecialTokens {
  const required = (text: string): number => {
    const id = tokenIdOf(tokenizer, text);
    if (id === null) throw new Error(`the tokenizer has no ${text} token; it is not a Whisper tokenizer`);
    return id;
  };
  const languages = new Map<string, number>();
  for (const [code] of WHISPER_LANGUAGES) {
    const id = tokenIdOf(tokenizer, `<|${code}|>`);
    if (id !== null) languages.set(code, id);
  }
  return {
    endOfText: required('<|endoftext|>'),
    startOfTranscript: required('<|startoftranscript|>'),
    translate: tokenIdOf(tokenizer, '<|translate|>'),
    transcribe: tokenIdOf(tokenizer, '<|transcribe|>'),
    startOfPrev: tokenIdOf(tokenizer, '<|startofprev|>'),
    noTimestamps: required('<|notimestamps|>'),
    timestampBegin: tokenIdOf(tokenizer, '<|0.00|>'),
    languages,
  };
}
