// Speech-to-text response bodies (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { SpeechResponse, SpeechSegment, SpeechStreamChoice, SpeechStreamChunk, SpeechUsage, SpeechVerboseResponse } from '../../../serving/speech/speech-types';
import { UsageDto } from '../../../common/dto/response-fields.dto';

export class SpeechUsageDto implements SpeechUsage {
  @ApiProperty({ enum: ['duration'], description: 'Usage is measured in audio duration.' }) type!: 'duration';
  @ApiProperty({ type: 'integer', description: 'Audio seconds, rounded up.' }) seconds!: number;
}

export class SpeechResponseDto implements SpeechResponse {
  @ApiProperty({ description: 'The transcript (or English translation), the windows\' texts joined in order.' }) text!: string;
  @ApiProperty({ type: () => SpeechUsageDto, required: false, description: 'Transcriptions only.' }) usage?: SpeechUsageDto;
}

export class SpeechSegmentDto implements SpeechSegment {
  @ApiProperty({ type: 'integer', description: 'Index of the segment in the response.' }) id!: number;
  @ApiProperty({ type: 'integer', description: 'Offset of the segment\'s 30 s window, in 10 ms frames.' }) seek!: number;
  @ApiProperty({ description: 'Seconds from the start of the recording.' }) start!: number;
  @ApiProperty({ description: 'Seconds from the start of the recording.' }) end!: number;
  @ApiProperty({ description: 'Text of the segment.' }) text!: string;
  @ApiProperty({ type: 'integer', isArray: true, description: 'Token ids of the text (timestamps left out).' }) tokens!: number[];
  @ApiProperty({ description: 'Sampling temperature the segment was generated with.' }) temperature!: number;
  @ApiProperty({ description: 'Mean log-probability of the segment\'s tokens and closing timestamp.' }) avg_logprob!: number;
  @ApiProperty({ description: 'UTF-8 bytes over zlib bytes of the text: high values mean repetitive text.' }) compression_ratio!: number;
  @ApiProperty({ type: 'number', nullable: true, description: 'Not computed (null), as in vLLM.' }) no_speech_prob!: number | null;
}

export class SpeechVerboseResponseDto implements SpeechVerboseResponse {
  @ApiProperty({ description: 'The segments\' texts joined.' }) text!: string;
  @ApiProperty({ description: 'ISO-639-1 code of the spoken language (given or detected).' }) language!: string;
  @ApiProperty({ description: 'Seconds of audio (a number, as OpenAI types it; vLLM sends a string).' }) duration!: number;
  @ApiProperty({ type: () => SpeechSegmentDto, isArray: true, description: 'Segments with timestamps, in time order.' }) segments!: SpeechSegmentDto[];
  @ApiProperty({ type: 'array', items: { type: 'object' }, nullable: true, description: 'Word timestamps are not supported: always null.' }) words!: null;
}

export class SpeechDeltaDto {
  @ApiProperty({ description: 'Text since the previous chunk.' }) content!: string;
}

export class SpeechStreamChoiceDto implements SpeechStreamChoice {
  @ApiProperty({ type: () => SpeechDeltaDto, description: 'The new text.' }) delta!: SpeechDeltaDto;
  @ApiProperty({ type: 'string', nullable: true, required: false, description: 'Set on the last chunk of each 30 s window.' }) finish_reason?: string | null;
  @ApiProperty({ oneOf: [{ type: 'string' }, { type: 'integer' }], nullable: true, required: false, description: 'The stop string or token id that ended the window.' })
  stop_reason?: string | number | null;
}

export class SpeechStreamResponseDto implements Omit<SpeechStreamChunk, 'usage'> {
  @ApiProperty({ description: 'transcribe-<id> or translate-<id>, the same on every chunk.' }) id!: string;
  @ApiProperty({ enum: ['transcription.chunk', 'translation.chunk'], description: 'The route\'s chunk type.' }) object!: 'transcription.chunk' | 'translation.chunk';
  @ApiProperty({ type: 'integer', description: 'Seconds since the epoch.' }) created!: number;
  @ApiProperty({ description: 'Served model name.' }) model!: string;
  @ApiProperty({ type: () => SpeechStreamChoiceDto, isArray: true, description: 'One choice; empty on the final usage chunk.' }) choices!: SpeechStreamChoiceDto[];
  @ApiProperty({
    type: () => UsageDto,
    required: false,
    description: 'Prompt tokens (with one per 10 ms of audio) and completion tokens: with stream_include_usage. On transcript.text.done also as OpenAI names them (type tokens, input_tokens, output_tokens).',
  })
  usage?: UsageDto;
  @ApiProperty({
    enum: ['transcript.text.delta', 'transcript.text.done'],
    required: false,
    description: 'Transcriptions: OpenAI\'s event type, on every chunk (one transcript.text.done chunk closes the stream).',
  })
  type?: 'transcript.text.delta' | 'transcript.text.done';
  @ApiProperty({ required: false, description: 'transcript.text.delta: the new text (the same as choices[0].delta.content).' }) delta?: string;
  @ApiProperty({ required: false, description: 'transcript.text.done: the whole transcript.' }) text?: string;
}
