// The multipart form of POST /v1/audio/transcriptions and /v1/audio/translations: OpenAI's fields
// plus vLLM's extras, vLLM's names (stream options flattened, as vLLM's form takes them).

import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { AUDIO_RESPONSE_FORMATS, type AudioResponseFormat } from '../../../serving/speech/speech-types';
import { StringListField } from '../../../common/dto/api-field';
import { FormBoolField, FormEnumField, FormIntField, FormJsonObjectField, FormListTransform, FormNumberField, FormStringField } from './form-fields';

/** Fields both routes share. */
export class SpeechRequestDto {
  @ApiProperty({ type: 'string', format: 'binary', description: 'The audio file: flac, mp3, mp4/m4a, ogg (vorbis, opus), wav or webm (also aac, aiff, caf, wma, amr).' })
  file?: unknown;

  @FormStringField({ description: 'Served model name; omitted = the served model.' })
  model?: string | null;

  @FormStringField({ description: 'Text of the previous audio (or words to expect), to guide the style; sent as Whisper\'s <|startofprev|> context.' })
  prompt?: string | null;

  @FormEnumField(AUDIO_RESPONSE_FORMATS, { description: 'json (text + usage), text, srt, verbose_json (segments with timestamps) or vtt.', default: 'json' })
  response_format?: AudioResponseFormat | null;

  @FormNumberField({ description: 'Sampling temperature; 0 = greedy.', default: 0 })
  temperature?: number | null;

  @FormStringField({ description: 'ISO-639-1 code of the spoken language; omitted = detected from the first 30 s.' })
  language?: string | null;

  @FormStringField({ description: 'Output language. Translations: en (Whisper translates to English only); transcriptions: the spoken language.' })
  to_language?: string | null;

  @FormBoolField({ description: 'Stream the text as server-sent events (transcription.chunk / translation.chunk).', default: false })
  stream?: boolean | null;

  @FormBoolField({ description: 'With stream: a final chunk carries the usage.', default: false })
  stream_include_usage?: boolean | null;

  @FormBoolField({ description: 'With stream_include_usage: every chunk carries the usage so far.', default: false })
  stream_continuous_usage_stats?: boolean | null;

  @FormNumberField({ description: 'Nucleus sampling threshold in (0, 1]. Default from generation_config.json, else 1.' })
  top_p?: number | null;

  @FormIntField({ description: 'Keep the k most likely tokens; 0 or -1 disables.' })
  top_k?: number | null;

  @FormNumberField({ description: 'Minimum probability relative to the most likely token, in [0, 1].' })
  min_p?: number | null;

  @FormIntField({ description: 'Seed of the request\'s sampler.' })
  seed?: number | null;

  @FormNumberField({ description: 'Frequency penalty in [-2, 2].', default: 0 })
  frequency_penalty?: number | null;

  @FormNumberField({ description: 'Repetition penalty in (0, 2]; 1 = none.' })
  repetition_penalty?: number | null;

  @FormNumberField({ description: 'Presence penalty in [-2, 2].', default: 0 })
  presence_penalty?: number | null;

  @FormIntField({ description: 'Most tokens to generate per 30 s window; default: up to the decoder\'s context.' })
  max_completion_tokens?: number | null;

  @FormJsonObjectField({ description: 'Extra parameters for custom extensions (a JSON object).' })
  vllm_xargs?: Record<string, unknown> | null;

  @FormBoolField({ description: 'Not supported for speech-to-text (400).' })
  use_beam_search?: boolean | null;

  @FormIntField({ description: 'Transcripts per request: 1 only.', default: 1 })
  n?: number | null;

  @FormNumberField({ description: 'Beam search length penalty (beam search is not supported).', default: 1 })
  length_penalty?: number | null;

  @FormBoolField({ description: 'Include the stop string in the output.', default: false })
  include_stop_str_in_output?: boolean | null;
}

export class TranscriptionRequestDto extends SpeechRequestDto {
  @FormListTransform()
  @IsOptional()
  @IsIn(['segment', 'word'], { each: true, message: "each value in $property must be 'segment' or 'word'" })
  @StringListField({ description: "Timestamps to return with verbose_json: 'segment' ('word' is not supported: 400)." })
  'timestamp_granularities[]'?: string[] | null;
}

export class TranslationRequestDto extends SpeechRequestDto {}
