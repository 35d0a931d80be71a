// Whisper's decoder prompts (vLLM's WhisperForConditionalGeneration.get_generation_prompt and
// get_language_detection_prompt, openai-whisper's sot_sequence):
//   [<|startofprev|> ' ' + previous text]  <|startoftranscript|> <|lang|> <|task|> <|notimestamps|>
// English-only checkpoints (no language tokens) take <|startoftranscript|> <|notimestamps|>. With
// timestamps the last token is <|0.00|> instead, so the model writes timestamp tokens.

import type { Tokenizer } from '../types';
import type { WhisperSpecialTokens } from './whisper-tokens';

export type WhisperTask = 'transcribe' | 'translate';

export interface WhisperPromptOptions {
  /** ISO 639-1 code; must be one of the model's languages (multilingual checkpoints). */
  language: string;
  task: WhisperTask;
  /** Text of the previous audio (style / vocabulary conditioning); '' or null for none. */
  previousText: string | null;
  timestamps: boolean;
  /** The decoder's context (max_target_positions): previous text keeps at most half of it. */
  maxTargetPositions: number;
}

export function whisperDecoderPrompt(tokenizer: Tokenizer, t: WhisperSpecialTokens, o: WhisperPromptOptions): number[] {
  const prompt: number[] = [];
  if (o.previousText && o.previousText.trim() !== '' && t.startOfPrev !== null) {
    const previous = tokenizer.encode(` ${o.previousText.trim()}`, { addSpecialTokens: false });
    // openai-whisper keeps the last n_text_ctx / 2 - 1 tokens of the previous text.
    prompt.push(t.startOfPrev, ...previous.slice(-(Math.floor(o.maxTargetPositions / 2) - 1)));
  }
  prompt.push(t.startOfTranscript);
  if (t.languages.size > 0) {
    const language = t.languages.get(o.language);
    const task = o.task === 'translate' ? t.translate : t.transcribe;
    if (language === undefined || task === null) throw new Error(`the model has no token for language '${o.language}' or task '${o.task}'`);
    prompt.push(language, task);
  }
  if (o.timestamps) {
    if (t.timestampBegin === null) throw new Error('the model has no timestamp tokens');
    prompt.push(t.timestampBegin);
  } else {
    prompt.push(t.noTimestamps);
  }
  return prompt;
}

/** The prompt whose next token is the spoken language (sampled among the language tokens). */
export function whisperLanguageDetectionPrompt(t: WhisperSpecialTokens): number[] {
  return [t.startOfTranscript];
}

/** The language code of a language token id (the inverse of `languages`). */
export function languageOfToken(t: WhisperSpecialTokens, id: number): string | null {
  for (const [code, tokenId] of t.languages) if (tokenId === id) return code;
  return null;
}
