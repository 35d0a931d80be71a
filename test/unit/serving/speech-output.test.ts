// Speech-to-text output shaping: segments from Whisper's timestamp tokens (offset per window),
// srt / vtt cues, window-ordered streaming, and Whisper's decoder prompts.

import type { PositionLogprobs, RequestOutput } from '../../../src/engine/types';
import { whisperDecoderPrompt, languageOfToken } from '../../../src/model/whisper/whisper-prompt';
import { whisperSpecialTokens } from '../../../src/model/whisper/whisper-tokens';
import { whisperTinyTokenizer } from '../../../src/model/dummy/builtin-whisper';
import { compressionRatio, windowSegments } from '../../../src/serving/speech/speech-segments';
import { inWindowOrder } from '../../../src/serving/speech/speech-to-text-serving';
import { toSrt, toVtt } from '../../../src/serving/speech/subtitles';

const tokenizer = whisperTinyTokenizer();
const t = whisperSpecialTokens(tokenizer);
const tb = t.timestampBegin!;
const ts = (seconds: number) => tb + Math.round(seconds / 0.02);
const text = (s: string) => tokenizer.encode(s, { addSpecialTokens: false });
const lp = (logprob: number): PositionLogprobs => ({ chosen: { tokenId: 0, logprob, rank: 1 }, top: [] });

describe('Whisper special tokens and prompts', () => {
  it('finds the tokens and builds vLLM/openai-whisper prompts', () => {
    expect(t.languages.size).toBe(100);
    expect(languageOfToken(t, t.languages.get('de')!)).toBe('de');
    const opts = { language: 'fr', task: 'translate' as const, previousText: null, timestamps: false, maxTargetPositions: 448 };
    expect(whisperDecoderPrompt(tokenizer, t, opts)).toEqual([t.startOfTranscript, t.languages.get('fr'), t.translate, t.noTimestamps]);
    const withPrev = whisperDecoderPrompt(tokenizer, t, { ...opts, task: 'transcribe', previousText: '  Hello there ', timestamps: true });
    expect(withPrev).toEqual([t.startOfPrev, ...text(' Hello there'), t.startOfTranscript, t.languages.get('fr'), t.transcribe, tb]);
    // The previous text keeps its last 448 / 2 - 1 tokens.
    const long = whisperDecoderPrompt(tokenizer, t, { ...opts, previousText: 'x'.repeat(500) });
    expect(long.length).toBe(1 + 223 + 4);
  });
});

describe('windowSegments', () => {
  const ctx = { timestampBegin: tb, endOfText: t.endOfText, temperature: 0, decode: (ids: readonly number[]) => tokenizer.decode(ids) };

  it('closes a segment at each timestamp pair and offsets times by the window start', () => {
    const tokens = [...text(' Hello'), ts(1.5), ts(1.5), ...text(' world'), ts(3.02), t.endOfText];
    const logprobs = tokens.map((_, i) => lp(-0.1 * (i + 1)));
    const segments = windowSegments({ offset: 30.25, duration: 10, tokenIds: tokens, logprobs, text: ' Hello world' }, ctx, 4);
    expect(segments.map((s) => [s.id, s.start, s.end, s.text, s.seek])).toEqual([
      [4, 30.25, 31.75, ' Hello', 3025],
      [5, 31.75, 33.27, ' world', 3025],
    ]);
    expect(segments[0].tokens).toEqual(text(' Hello'));
    // avg_logprob (vLLM): the logprobs of the text tokens and the closing timestamp, over the
    // slice from the opening timestamp to the closing pair.
    const hello = text(' Hello').length;
    const sum = Array.from({ length: hello + 1 }, (_, i) => -0.1 * (i + 1)).reduce((a, b) => a + b, 0);
    expect(segments[0].avg_logprob).toBeCloseTo(sum / (hello + 2), 10);
  });

  it('gives text without timestamps one segment over the window', () => {
    const tokens = text(' no timestamps');
    const [segment, ...rest] = windowSegments({ offset: 60, duration: 12.5, tokenIds: tokens, logprobs: tokens.map(() => lp(-1)), text: ' no timestamps' }, ctx, 0);
    expect(rest).toEqual([]);
    expect([segment.start, segment.end, segment.text, segment.avg_logprob]).toEqual([60, 72.5, ' no timestamps', -1]);
  });

  it('measures repetitive text as more compressible', () => {
    expect(compressionRatio('la '.repeat(40))).toBeGreaterThan(2.4);
    expect(compressionRatio('The quick brown fox.')).toBeLessThan(1.5);
  });
});

describe('srt and vtt', () => {
  const segments = [
    { id: 0, seek: 0, start: 0, end: 1.5, text: ' Hello', tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 1, no_speech_prob: null },
    { id: 1, seek: 0, start: 3661.25, end: 3662.005, text: ' world ', tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 1, no_speech_prob: null },
  ];
  it('formats cues', () => {
    expect(toSrt(segments)).toBe('1\n00:00:00,000 --> 00:00:01,500\nHello\n\n2\n01:01:01,250 --> 01:01:02,005\nworld\n');
    expect(toVtt(segments)).toBe('WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello\n\n01:01:01.250 --> 01:01:02.005\nworld\n');
  });
});

describe('inWindowOrder', () => {
  const output = (requestId: string, text: string, finished: boolean): RequestOutput => ({
    requestId,
    promptTokenIds: [],
    promptLogprobs: null,
    outputs: [{ index: 0, text, tokenIds: [], cumulativeLogprob: null, logprobs: null, finishReason: finished ? 'stop' : null, stopReason: null }],
    finished,
    numCachedTokens: 0,
  });
  const produced: string[] = [];
  async function* source(id: string, delays: number[]): AsyncGenerator<RequestOutput> {
    for (const [i, delay] of delays.entries()) {
      await new Promise((r) => setTimeout(r, delay));
      produced.push(`${id}${i}`);
      yield output(id, `${id}${i}`, i === delays.length - 1);
    }
  }

  it('passes window 0 live and holds later windows until the earlier ones finish, all running at once', async () => {
    const seen: string[] = [];
    for await (const o of inWindowOrder([source('a', [30, 30, 30]), source('b', [1, 1]), source('c', [5, 60])])) seen.push(o.outputs[0].text);
    expect(seen).toEqual(['a0', 'a1', 'a2', 'b0', 'b1', 'c0', 'c1']);
    // The later windows were generated while window 0 still ran.
    expect(produced.indexOf('b1')).toBeLessThan(produced.indexOf('a2'));
    expect(produced.indexOf('c0')).toBeLessThan(produced.indexOf('a2'));
  });
});
