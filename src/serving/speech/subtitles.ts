// response_format srt and vtt: one cue per segment.

import type { SpeechSegment } from './speech-types';

/** hh:mm:ss<sep>mmm */
function timestamp(seconds: number, separator: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (v: number, width = 2) => String(v).padStart(width, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

export function toSrt(segments: readonly SpeechSegment[]): string {
  return segments.map((s, i) => `${i + 1}\n${timestamp(s.start, ',')} --> ${timestamp(s.end, ',')}\n${s.text.trim()}\n`).join('\n');
}

export function toVtt(segments: readonly SpeechSegment[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${timestamp(s.start, '.')} --> ${timestamp(s.end, '.')}\n${s.text.trim()}\n`).join('\n')}`;
}
