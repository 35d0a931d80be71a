// Streamed transcriptions speak two dialects in one stream: vLLM's `transcription.chunk` objects
// (choices[0].delta.content) and OpenAI's typed events (`transcript.text.delta` / `.done`), which
// the official SDKs switch on by `type`. Each SSE object carries both shapes' fields, so code
// written for either client reads the text; no field is shared with a different meaning.

import type { UsageInfo } from '../usage';
import type { SpeechStreamChunk } from './speech-types';

/** Usage under both namings: vLLM's prompt/completion tokens and OpenAI's input/output tokens. */
export type TranscriptUsage = UsageInfo & { type: 'tokens'; input_tokens: number; output_tokens: number };

/** A vLLM chunk that also is OpenAI's `transcript.text.delta` event. */
export type TranscriptDeltaChunk = SpeechStreamChunk & { type: 'transcript.text.delta'; delta: string };

/** OpenAI's `transcript.text.done` event, shaped as vLLM's last chunk. */
export type TranscriptDoneChunk = Omit<SpeechStreamChunk, 'usage'> & { type: 'transcript.text.done'; text: string; usage?: TranscriptUsage };

export function transcriptDelta(chunk: SpeechStreamChunk, text: string): TranscriptDeltaChunk {
  return { ...chunk, type: 'transcript.text.delta', delta: text };
}

/**
 * The closing event: with usage requested it takes the place of vLLM's usage chunk (choices
 * empty); without, it carries one empty delta so that every chunk a vLLM client sees has a choice.
 */
export function transcriptDone(base: Omit<SpeechStreamChunk, 'choices' | 'usage'>, text: string, usage: UsageInfo | null): TranscriptDoneChunk {
  if (usage === null) return { ...base, choices: [{ delta: { content: '' } }], type: 'transcript.text.done', text };
  const both: TranscriptUsage = { ...usage, type: 'tokens', input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens };
  return { ...base, choices: [], type: 'transcript.text.done', text, usage: both };
}
