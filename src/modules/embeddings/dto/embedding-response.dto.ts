// /v1/embeddings response body (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { EmbeddingData, EmbeddingResponse } from '../../../serving/pooling/embedding-serving';
import { UsageDto } from '../../../common/dto/response-fields.dto';

export class EmbeddingDataDto implements EmbeddingData {
  @ApiProperty({ type: 'integer' }) index!: number;
  @ApiProperty({ enum: ['embedding'] }) object!: 'embedding';
  @ApiProperty({ oneOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string', description: 'base64' }] }) embedding!: number[] | string;
}

export class EmbeddingResponseDto implements EmbeddingResponse {
  @ApiProperty({ example: 'embd-3f2a…' }) id!: string;
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: 'integer' }) created!: number;
  @ApiProperty() model!: string;
  @ApiProperty({ type: () => EmbeddingDataDto, isArray: true }) data!: EmbeddingDataDto[];
  @ApiProperty({ type: () => UsageDto }) usage!: UsageDto;
}
