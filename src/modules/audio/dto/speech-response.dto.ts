// Speech-to-text response bodies (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { SpeechResponse, SpeechSegment, SpeechUsage, SpeechVerboseResponse } from '../../../serving/speech/speech-types';

export class SpeechUsageDto implements SpeechUsage {
  @ApiProperty({ enum: ['duration'] }) type!: 'duration';
  @ApiProperty({ type: 'integer', description: 'Audio seconds, rounded up.' }) seconds!: number;
}

export class SpeechResponseDto implements SpeechResponse {
  @ApiProperty() text!: string;
  @ApiProperty({ type: () => SpeechUsageDto, required: false, description: 'Transcriptions only.' }) usage?: SpeechUsageDto;
}

export class SpeechSegmentDto implements SpeechSegment {
  @ApiProperty({ type: 'integer' }) id!: number;
  @ApiProperty({ type: 'integer', description: 'Offset of the segment\'s 30 s window, in 10 ms frames.' }) seek!: number;
  @ApiProperty({ description: 'Seconds from the start of the recording.' }) start!: number;
  @ApiProperty({ description: 'Seconds from the start of the recording.' }) end!: number;
  @ApiProperty() text!: string;
  @ApiProperty({ type: 'integer', isArray: true }) tokens!: number[];
  @ApiProperty() temperature!: number;
  @ApiProperty() avg_logprob!: number;
  @ApiProperty() compression_ratio!: number;
  @ApiProperty({ type: 'number', nullable: true, description: 'Not computed (null), as in vLLM.' }) no_speech_prob!: number | null;
}

export class SpeechVerboseResponseDto implements SpeechVerboseResponse {
  @ApiProperty() text!: string;
  @ApiProperty({ description: 'ISO-639-1 code of the spoken language (given or detected).' }) language!: string;
  @ApiProperty({ description: 'Seconds of audio, as a string.' }) duration!: string;
  @ApiProperty({ type: () => SpeechSegmentDto, isArray: true }) segments!: SpeechSegmentDto[];
  @ApiProperty({ type: 'array', items: { type: 'object' }, nullable: true, description: 'Word timestamps are not supported: always null.' }) words!: null;
}
