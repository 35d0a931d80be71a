// /score and /rerank response bodies (documentation for the OpenAPI spec).

import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { RerankResponse, RerankResult, ScoreData, ScoreResponse } from '../../../serving/pooling/score-serving';
import { PoolingListFieldsDto, UsageDto } from '../../../common/dto/response-fields.dto';

@ApiSchema({ name: 'ScoreResponseData' })
export class ScoreDataDto implements ScoreData {
  @ApiProperty({ type: 'integer', description: 'Position of the pair (the text_2 entry).' })
  index!: number;
  @ApiProperty({ enum: ['score'], description: 'Always score.' })
  object!: 'score';
  @ApiProperty({ description: "A cross-encoder's score (sigmoid of its logit), or the cosine similarity of the embeddings." })
  score!: number;
}

export class ScoreResponseDto extends PoolingListFieldsDto implements Omit<ScoreResponse, 'usage'> {
  @ApiProperty({ example: 'score-3f2a…', description: 'score-<X-Request-Id, request_id or a random id>.' })
  id!: string;
  @ApiProperty({ type: () => ScoreDataDto, isArray: true, description: 'One score per pair, in order.' })
  data!: ScoreDataDto[];
  @ApiProperty({ type: () => UsageDto, description: 'Prompt tokens of all pairs.' })
  usage!: UsageDto;
}

export class RerankDocumentDto {
  @ApiProperty({ description: 'The document as sent.' })
  text!: string;
}

export class RerankResultDto implements RerankResult {
  @ApiProperty({ type: 'integer', description: 'Position of the document in the request.' })
  index!: number;
  @ApiProperty({ type: () => RerankDocumentDto, required: false, description: 'The document, unless return_documents is false.' })
  document?: RerankDocumentDto;
  @ApiProperty({ description: 'Relevance of the document to the query (higher first).' })
  relevance_score!: number;
}

export class RerankUsageDto {
  @ApiProperty({ type: 'integer', description: 'Tokens of all (query, document) inputs.' })
  prompt_tokens!: number;
  @ApiProperty({ type: 'integer', description: 'The same as prompt_tokens.' })
  total_tokens!: number;
}

export class RerankResponseDto implements RerankResponse {
  @ApiProperty({ example: 'rerank-3f2a…', description: 'rerank-<X-Request-Id, request_id or a random id>.' })
  id!: string;
  @ApiProperty({ description: 'The served model name.' })
  model!: string;
  @ApiProperty({ type: () => RerankUsageDto, description: 'Token counts.' })
  usage!: RerankUsageDto;
  @ApiProperty({ type: () => RerankResultDto, isArray: true, description: 'Sorted by relevance_score, best first (top_n of them).' })
  results!: RerankResultDto[];
}
