// verbose_json / srt / vtt segments from Whisper's timestamp tokens (vLLM's _get_verbose_segments):
// the output reads <|t0|> text <|t1|><|t1|> text <|t2|> …; a pair of consecutive timestamp
// tokens closes a segment. Times are 0.02 s steps from the window's start, plus the window's
// offset in the recording.

import { deflateSync } from 'node:zlib';
import { TIMESTAMP_SECONDS } from '../../model/whisper/whisper-tokens';
import type { PositionLogprobs } from '../../engine/types';
import type { SpeechSegment } from './speech-types';

export interface WindowOutput {
  /** Seconds from the start of the recording to the window's start. */
  offset: number;
  duration: number;
  tokenIds: readonly number[];
  /** The sampled tokens' logprobs (one per token). */
  logprobs: readonly PositionLogprobs[];
  /** The window's plain text (special tokens skipped). */
  text: string;
}

export interface SegmentContext {
  timestampBegin: number;
  endOfText: number;
  temperature: number;
  decode: (ids: readonly number[]) => string;
}

/** Segments of one window, ids starting at `firstId`. Text outside any timestamp pair becomes one segment over the window. */
export function windowSegments(w: WindowOutput, ctx: SegmentContext, firstId: number): SpeechSegment[] {
  const tb = ctx.timestampBegin;
  const logprobOf = (i: number) => w.logprobs[i]?.chosen.logprob ?? 0;
  let tokens = [...w.tokenIds];
  if (tokens[tokens.length - 1] === ctx.endOfText) tokens = tokens.slice(0, -1);
  // The prompt ended with <|0.00|>: the first segment starts there.
  const seq = [tb, ...tokens];
  const n = seq.length;
  if (n >= 2 && seq[n - 2] < tb && seq[n - 1] >= tb) seq.push(seq[n - 1]);
  const segments: SpeechSegment[] = [];
  let start = 0;
  let logprobSum = 0;
  for (let i = 1; i < seq.length; i++) {
    if (seq[i] >= tb && seq[i - 1] >= tb) {
      const slice = seq.slice(start, i);
      const text = ctx.decode(slice.slice(1, -1));
      segments.push(segment(firstId + segments.length, w, slice.slice(1, -1), text, (slice[0] - tb) * TIMESTAMP_SECONDS, (slice[slice.length - 1] - tb) * TIMESTAMP_SECONDS, logprobSum / (i - start), ctx.temperature));
      start = i;
      logprobSum = 0;
    } else if (i - 1 < tokens.length) {
      logprobSum += logprobOf(i - 1);
    }
  }
  if (segments.length === 0 && w.text.trim() !== '') {
    const mean = tokens.length > 0 ? tokens.reduce((sum, _, i) => sum + logprobOf(i), 0) / tokens.length : 0;
    segments.push(segment(firstId, w, tokens.filter((t) => t < tb), w.text, 0, w.duration, mean, ctx.temperature));
  }
  return segments;
}

function segment(id: number, w: WindowOutput, tokens: number[], text: string, start: number, end: number, avgLogprob: number, temperature: number): SpeechSegment {
  return {
    id,
    seek: Math.round(w.offset * 100),
    start: round(w.offset + start),
    end: round(w.offset + end),
    text,
    tokens,
    temperature,
    avg_logprob: avgLogprob,
    compression_ratio: compressionRatio(text),
    no_speech_prob: null,
  };
}

/** Bytes of the text over bytes of its zlib stream: high values mean repetitive (likely hallucinated) text. */
export function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length === 0 ? 0 : bytes.length / deflateSync(bytes).length;
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
