// /score and /rerank response bodies (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { RerankResponse, RerankResult, ScoreData, ScoreResponse } from '../../../serving/pooling/score-serving';
import { UsageDto } from '../../../common/dto/response-fields.dto';

export class ScoreDataDto implements ScoreData {
  @ApiProperty({ type: 'integer' }) index!: number;
  @ApiProperty({ enum: ['score'] }) object!: 'score';
  @ApiProperty() score!: number;
}

export class ScoreResponseDto implements ScoreResponse {
  @ApiProperty({ example: 'score-3f2a…' }) id!: string;
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: 'integer' }) created!: number;
  @ApiProperty() model!: string;
  @ApiProperty({ type: () => ScoreDataDto, isArray: true }) data!: ScoreDataDto[];
  @ApiProperty({ type: () => UsageDto }) usage!: UsageDto;
}

export class RerankDocumentDto {
  @ApiProperty() text!: string;
}

export class RerankResultDto implements RerankResult {
  @ApiProperty({ type: 'integer', description: 'Position of the document in the request.' }) index!: number;
  @ApiProperty({ type: () => RerankDocumentDto, required: false, description: 'Unless return_documents is false.' }) document?: RerankDocumentDto;
  @ApiProperty() relevance_score!: number;
}

export class RerankUsageDto {
  @ApiProperty({ type: 'integer' }) prompt_tokens!: number;
  @ApiProperty({ type: 'integer' }) total_tokens!: number;
}

export class RerankResponseDto implements RerankResponse {
  @ApiProperty({ example: 'rerank-3f2a…' }) id!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ type: () => RerankUsageDto }) usage!: RerankUsageDto;
  @ApiProperty({ type: () => RerankResultDto, isArray: true, description: 'Sorted by relevance_score, best first.' }) results!: RerankResultDto[];
}
