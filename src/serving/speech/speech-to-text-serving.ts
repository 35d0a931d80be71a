// /v1/audio/transcriptions and /v1/audio/translations (vLLM's OpenAISpeechToText): the upload is
// decoded and cut into windows by the audio front end, each window becomes one engine request
// (an encoder input + Whisper's decoder prompt), all windows run concurrently in the engine's
// batch, and their texts are joined in order. Without `language` the first window's language is
// detected first (one step over the language tokens).

import { OpenAIHttpError } from '../openai-error';
import { RequestValidationError } from '../../engine/errors';
import { OUTPUT_KIND, type EngineClient, type EngineRequest, type RequestOutput, type SamplingParams } from '../../engine/types';
import type { AudioFeatureConfig } from '../../model/audio/feature-config';
import { languageOfToken, whisperDecoderPrompt, whisperLanguageDetectionPrompt } from '../../model/whisper/whisper-prompt';
import { whisperSpecialTokens, type WhisperSpecialTokens } from '../../model/whisper/whisper-tokens';
import type { AudioFrontend } from '../audio/audio-frontend';
import { AudioInputError } from '../audio/decode-audio';
import type { PreparedAudio } from '../audio/prepare-audio';
import { drainAll, generateFor, mergeStreams } from '../engine-stream';
import { createdNow, requestIdBase } from '../ids';
import { resolveMaxTokens } from '../max-tokens';
import { buildSamplingParams } from '../sampling-params';
import { sentFields } from '../sampling-request';
import { checkRequestExtras, resolveBaseModelName, type ServingOptions } from '../serving-options';
import { buildUsage, type UsageInfo } from '../usage';
import { windowSegments, type WindowOutput } from './speech-segments';
import type { AudioResponseFormat, SpeechResponse, SpeechSegment, SpeechStreamChunk, SpeechTask, SpeechToTextFields, SpeechVerboseResponse } from './speech-types';
import { toSrt, toVtt } from './subtitles';
import { transcriptDelta, transcriptDone, type TranscriptDoneChunk } from './transcript-events';

/** Largest upload vLLM accepts by default (VLLM_MAX_AUDIO_CLIP_FILESIZE_MB). */
export const DEFAULT_MAX_AUDIO_FILESIZE_MB = 25;

export interface PreparedSpeech {
  id: string;
  model: string;
  created: number;
  fields: SpeechToTextFields;
  format: AudioResponseFormat;
  /** The spoken language (given or detected). */
  language: string;
  durationSeconds: number;
  audio: PreparedAudio;
  params: SamplingParams;
  /** One per window, in order. */
  requests: EngineRequest[];
}

export class SpeechToTextServing {
  private tokens: WhisperSpecialTokens | null = null;

  constructor(
    private readonly engine: EngineClient,
    private readonly opts: ServingOptions,
    private readonly task: SpeechTask,
    private readonly frontend: AudioFrontend,
  ) {}

  /** Checks the fields, decodes the audio, detects the language if needed; 400/404 on bad input. */
  async prepare(fields: SpeechToTextFields, file: Uint8Array | null, headerRequestId: string | null, signal?: AbortSignal): Promise<PreparedSpeech> {
    const model = resolveBaseModelName(fields.model, this.opts, 'audio API');
    this.audioFeatures(); // 400 when the served model takes no audio
    const tokens = this.specialTokens();
    const format = fields.response_format ?? 'json';
    this.checkFields(fields, format, tokens);
    if (file === null) throw new RequestValidationError('The `file` field (the audio file) is required.', 'file');
    let audio: PreparedAudio;
    try {
      audio = await this.frontend.prepare(file, signal);
    } catch (err) {
      if (err instanceof AudioInputError) throw new RequestValidationError(err.message, 'file');
      throw err;
    }
    const id = `${this.task}-${requestIdBase(headerRequestId, null)}`;
    const language = fields.language ?? (await this.detectLanguage(audio, tokens, id, signal));
    const timestamps = format === 'verbose_json' || format === 'srt' || format === 'vtt';
    const prompt = whisperDecoderPrompt(this.engine.tokenizer!, tokens, {
      language,
      task: this.task,
      previousText: fields.prompt ?? null,
      timestamps,
      maxTargetPositions: this.engine.maxModelLen,
    });
    const params = this.samplingParams(fields, prompt.length, timestamps);
    const requests = audio.windows.map((w, i) => ({ requestId: `${id}_${i}`, promptTokenIds: prompt, params, encoderInput: w.features }));
    return { id, model, created: createdNow(), fields, format, language, durationSeconds: audio.durationSeconds, audio, params, requests };
  }

  /** The whole response: a JSON object (json, verbose_json) or text (text, srt, vtt). */
  async complete(prep: PreparedSpeech, signal?: AbortSignal): Promise<SpeechResponse | SpeechVerboseResponse | string> {
    const results = await drainAll(this.engine, prep.requests, prep.requests.map(() => prep.params.output_kind), signal);
    const windows: WindowOutput[] = results.map((r, i) => ({
      offset: prep.audio.windows[i].startSeconds,
      duration: prep.audio.windows[i].durationSeconds,
      tokenIds: r.choices[0]?.tokenIds ?? [],
      logprobs: r.choices[0]?.logprobs ?? [],
      text: r.choices[0]?.text ?? '',
    }));
    const text = windows.map((w) => w.text).join('');
    switch (prep.format) {
      case 'text':
        return text;
      case 'json':
        return this.task === 'transcribe' ? { text, usage: { type: 'duration', seconds: Math.ceil(prep.durationSeconds) } } : { text };
      default: {
        const segments = this.segments(prep, windows);
        if (prep.format === 'srt') return toSrt(segments);
        if (prep.format === 'vtt') return toVtt(segments);
        return { text: segments.map((s) => s.text).join(''), language: prep.language, duration: prep.durationSeconds, segments, words: null };
      }
    }
  }

  /**
   * SSE chunks (`transcription.chunk` / `translation.chunk`): each window's deltas, in window order;
   * transcriptions' chunks are OpenAI's `transcript.text.*` events too (transcript-events.ts).
   */
  async *stream(prep: PreparedSpeech, signal?: AbortSignal): AsyncGenerator<SpeechStreamChunk | TranscriptDoneChunk> {
    const { fields } = prep;
    const includeUsage = this.opts.enableForceIncludeUsage || !!fields.stream_include_usage;
    const continuousUsage = includeUsage && !!fields.stream_continuous_usage_stats;
    const base = { id: prep.id, object: this.task === 'transcribe' ? ('transcription.chunk' as const) : ('translation.chunk' as const), created: prep.created, model: prep.model };
    // vLLM counts the audio as prompt tokens: one per feature frame of the recording.
    const audioTokens = Math.ceil((prep.durationSeconds * this.audioFeatures().samplingRate) / this.audioFeatures().hopLength);
    const promptTokens = prep.requests.reduce((n, r) => n + r.promptTokenIds.length, 0) + audioTokens;
    let completionTokens = 0;
    let text = '';
    const usage = (): UsageInfo => buildUsage(promptTokens, completionTokens, 0, { enablePromptTokensDetails: false });
    // Transcriptions also speak OpenAI's typed events (its API streams no translations).
    const openAiEvents = this.task === 'transcribe';
    for await (const output of inWindowOrder(prep.requests.map((r) => generateFor(this.engine, r, signal)))) {
      const out = output.outputs[0];
      if (out.finishReason === 'error') throw new OpenAIHttpError(500, output.error ?? 'Internal server error during generation.');
      completionTokens += out.tokenIds.length;
      text += out.text;
      const choice = out.finishReason === null ? { delta: { content: out.text } } : { delta: { content: out.text }, finish_reason: out.finishReason, stop_reason: out.stopReason };
      const chunk: SpeechStreamChunk = { ...base, choices: [choice], ...(continuousUsage ? { usage: usage() } : {}) };
      yield openAiEvents ? transcriptDelta(chunk, out.text) : chunk;
    }
    if (openAiEvents) yield transcriptDone(base, text, includeUsage ? usage() : null);
    else if (includeUsage) yield { ...base, choices: [], usage: usage() };
  }

  private audioFeatures(): AudioFeatureConfig {
    const features = this.engine.audioFeatures;
    if (!features) throw OpenAIHttpError.badRequest('The model does not support the Transcriptions API');
    return features;
  }

  private specialTokens(): WhisperSpecialTokens {
    if (!this.tokens) {
      const tokenizer = this.engine.tokenizer;
      if (!tokenizer) throw OpenAIHttpError.badRequest('Speech-to-text needs the tokenizer (the server runs with --skip-tokenizer-init).');
      this.tokens = whisperSpecialTokens(tokenizer);
    }
    return this.tokens;
  }

  private checkFields(f: SpeechToTextFields, format: AudioResponseFormat, tokens: WhisperSpecialTokens): void {
    checkRequestExtras(f, this.opts, false);
    const supported = tokens.languages.size > 0 ? [...tokens.languages.keys()] : ['en'];
    const checkLanguage = (code: string | null | undefined, param: string) => {
      if (code != null && !supported.includes(code)) {
        throw new RequestValidationError(`Unsupported language: ${code}. Language should be one of: ${supported.join(', ')}.`, param);
      }
    };
    checkLanguage(f.language, 'language');
    if (this.task === 'translate') {
      if (tokens.translate === null) throw new RequestValidationError('This model is English-only: it cannot translate.', 'model');
      if (f.to_language != null && f.to_language !== 'en') throw new RequestValidationError('Whisper translates to English only: to_language must be en.', 'to_language');
    } else if (f.to_language != null && f.to_language !== f.language) {
      throw new RequestValidationError('Whisper transcribes in the spoken language: to_language must equal language (use /v1/audio/translations for English).', 'to_language');
    }
    if (f.stream && (format === 'verbose_json' || format === 'srt' || format === 'vtt')) {
      throw new RequestValidationError(`${format} format doesn't support streaming case`, 'response_format');
    }
    if (!f.stream && (f.stream_include_usage || f.stream_continuous_usage_stats)) {
      throw new RequestValidationError('Stream options can only be defined when `stream=True`.', f.stream_include_usage ? 'stream_include_usage' : 'stream_continuous_usage_stats');
    }
    for (const granularity of f.timestamp_granularities ?? []) {
      if (granularity === 'word') throw new RequestValidationError('Word timestamps are not supported; use segment timestamps.', 'timestamp_granularities[]');
      if (format !== 'verbose_json') throw new RequestValidationError('timestamp_granularities[] requires response_format verbose_json.', 'timestamp_granularities[]');
    }
    if (f.use_beam_search) throw new RequestValidationError('Beam search is not supported for speech-to-text.', 'use_beam_search');
    if (f.n != null && f.n !== 1) throw new RequestValidationError('Speech-to-text returns one transcript: n must be 1.', 'n');
    if ((format === 'verbose_json' || format === 'srt' || format === 'vtt') && tokens.timestampBegin === null) {
      throw new RequestValidationError(`${format} needs timestamp tokens, which this model's vocabulary lacks.`, 'response_format');
    }
  }

  private samplingParams(f: SpeechToTextFields, promptLength: number, timestamps: boolean): SamplingParams {
    const maxTokens = resolveMaxTokens({
      requested: f.max_completion_tokens ?? null,
      param: 'max_completion_tokens',
      endpointDefault: null,
      generationConfigMax: this.engine.generationDefaults.max_new_tokens,
      promptLength,
      maxModelLen: this.engine.maxModelLen,
      promptParam: 'prompt',
    });
    // Only the sampling fields (response_format here is the transcript's format, not a structured
    // output). vLLM's speech-to-text default temperature is 0 (greedy), whatever generation_config says.
    const { top_p, top_k, min_p, seed, frequency_penalty, repetition_penalty, presence_penalty, n, length_penalty, include_stop_str_in_output, vllm_xargs } = f;
    const request = {
      ...{ top_p, top_k, min_p, seed, frequency_penalty, repetition_penalty, presence_penalty, n, length_penalty, include_stop_str_in_output, vllm_xargs },
      temperature: f.temperature ?? 0,
      stream: !!f.stream,
    };
    return buildSamplingParams(request, {
      sent: sentFields(request),
      generationDefaults: this.engine.generationDefaults,
      maxTokens,
      // Segments report each token's logprob (avg_logprob).
      logprobs: timestamps ? 0 : null,
      vocabSize: this.engine.modelConfig.vocabSize,
      maxNumSeqs: this.engine.maxNumSeqs,
      maxLogprobs: this.opts.maxLogprobs,
      stream: !!f.stream,
    });
  }

  /** vLLM: the first window, one greedy step among the language tokens. */
  private async detectLanguage(audio: PreparedAudio, tokens: WhisperSpecialTokens, id: string, signal?: AbortSignal): Promise<string> {
    if (tokens.languages.size === 0) return 'en';
    const params = buildSamplingParams(
      { temperature: 0, allowed_token_ids: [...tokens.languages.values()] },
      {
        sent: new Set(['temperature', 'allowed_token_ids']),
        generationDefaults: {},
        maxTokens: 1,
        logprobs: null,
        vocabSize: this.engine.modelConfig.vocabSize,
        maxNumSeqs: this.engine.maxNumSeqs,
        maxLogprobs: this.opts.maxLogprobs,
        stream: false,
      },
    );
    const request: EngineRequest = { requestId: `${id}-lang_detect`, promptTokenIds: whisperLanguageDetectionPrompt(tokens), params, encoderInput: audio.windows[0].features };
    const [result] = await drainAll(this.engine, [request], [OUTPUT_KIND.FINAL_ONLY], signal);
    const language = languageOfToken(tokens, result.choices[0]?.tokenIds[0] ?? -1);
    if (language === null) throw new OpenAIHttpError(500, 'Language detection did not produce a language token.');
    return language;
  }

  private segments(prep: PreparedSpeech, windows: WindowOutput[]): SpeechSegment[] {
    const tokens = this.specialTokens();
    const tokenizer = this.engine.tokenizer!;
    const ctx = { timestampBegin: tokens.timestampBegin!, endOfText: tokens.endOfText, temperature: prep.params.temperature, decode: (ids: readonly number[]) => tokenizer.decode(ids) };
    const segments: SpeechSegment[] = [];
    for (const w of windows) segments.push(...windowSegments(w, ctx, segments.length));
    return segments;
  }
}

/**
 * The outputs of several engine streams in stream order, while all of them run: window i's
 * outputs are passed on live once windows 0..i-1 have finished, and buffered until then.
 */
export async function* inWindowOrder(streams: AsyncIterable<RequestOutput>[]): AsyncGenerator<RequestOutput> {
  const buffered: RequestOutput[][] = streams.map(() => []);
  let current = 0;
  for await (const { source, item } of mergeStreams(streams)) {
    buffered[source].push(item);
    while (current < streams.length && buffered[current].length > 0) {
      const next = buffered[current].shift()!;
      yield next;
      if (next.finished) current++;
    }
  }
  for (; current < streams.length; current++) yield* buffered[current];
}
