// /v1/embeddings response body (documentation for the OpenAPI spec).

import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { EmbeddingData, EmbeddingResponse } from '../../../serving/pooling/embedding-serving';
import { PoolingListFieldsDto, UsageDto } from '../../../common/dto/response-fields.dto';

@ApiSchema({ name: 'EmbeddingResponseData' })
export class EmbeddingDataDto implements EmbeddingData {
  @ApiProperty({ type: 'integer', description: 'Position of the input in the request.' })
  index!: number;
  @ApiProperty({ enum: ['embedding'], description: 'Always embedding.' })
  object!: 'embedding';
  @ApiProperty({ oneOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string' }], description: 'The vector: floats, or base64 of its bytes (encoding_format base64).' })
  embedding!: number[] | string;
}

export class EmbeddingResponseDto extends PoolingListFieldsDto implements Omit<EmbeddingResponse, 'usage'> {
  @ApiProperty({ example: 'embd-3f2a…', description: 'embd-<X-Request-Id, request_id or a random id>.' })
  id!: string;
  @ApiProperty({ type: () => EmbeddingDataDto, isArray: true, description: 'One embedding per input, in order.' })
  data!: EmbeddingDataDto[];
  @ApiProperty({ type: () => UsageDto, description: 'Prompt tokens of all inputs.' })
  usage!: UsageDto;
}
