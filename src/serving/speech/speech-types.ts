// The speech-to-text request fields (OpenAI's Transcription/Translation API plus vLLM's extras,
// vLLM's names) after multipart parsing, and the response shapes.

import type { UsageInfo } from '../usage';

export type SpeechTask = 'transcribe' | 'translate';
export const AUDIO_RESPONSE_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
export type AudioResponseFormat = (typeof AUDIO_RESPONSE_FORMATS)[number];

export interface SpeechToTextFields {
  model?: string | null;
  /** ISO-639-1 code of the spoken language; absent = detected from the audio. */
  language?: string | null;
  /** Text of the previous audio, for style and vocabulary. */
  prompt?: string | null;
  response_format?: AudioResponseFormat | null;
  /** 'segment' (verbose_json only); 'word' is not supported. */
  timestamp_granularities?: string[] | null;
  stream?: boolean | null;
  stream_include_usage?: boolean | null;
  stream_continuous_usage_stats?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  seed?: number | null;
  frequency_penalty?: number | null;
  repetition_penalty?: number | null;
  presence_penalty?: number | null;
  max_completion_tokens?: number | null;
  /** Translations: the output language (Whisper: 'en' only). */
  to_language?: string | null;
  vllm_xargs?: Record<string, unknown> | null;
  use_beam_search?: boolean | null;
  n?: number | null;
  length_penalty?: number | null;
  include_stop_str_in_output?: boolean | null;
}

export interface SpeechUsage {
  type: 'duration';
  /** Audio seconds, rounded up. */
  seconds: number;
}

export interface SpeechSegment {
  id: number;
  /** Offset of the segment's window in the recording, in 10 ms feature frames. */
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number | null;
}

/** response_format json. Translations carry no usage (as vLLM). */
export interface SpeechResponse {
  text: string;
  usage?: SpeechUsage;
}

/** response_format verbose_json. */
export interface SpeechVerboseResponse {
  text: string;
  language: string;
  /** Seconds, a number as OpenAI's types have it (vLLM sends a string). */
  duration: number;
  segments: SpeechSegment[];
  words: null;
}

export interface SpeechStreamChoice {
  delta: { content: string };
  finish_reason?: string | null;
  stop_reason?: string | number | null;
}

export interface SpeechStreamChunk {
  id: string;
  object: 'transcription.chunk' | 'translation.chunk';
  created: number;
  model: string;
  choices: SpeechStreamChoice[];
  usage?: UsageInfo;
}
