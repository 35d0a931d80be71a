// /pooling response body (documentation for the OpenAPI spec).

import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { PoolingData, PoolingResponse } from '../../../serving/pooling/pooling-serving';
import { PoolingListFieldsDto, UsageDto } from '../../../common/dto/response-fields.dto';

@ApiSchema({ name: 'PoolingResponseData' })
export class PoolingDataDto implements PoolingData {
  @ApiProperty({ type: 'integer', description: 'Position of the input in the request.' })
  index!: number;
  @ApiProperty({ enum: ['pooling'], description: 'Always pooling.' })
  object!: 'pooling';
  @ApiProperty({ oneOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string' }], description: 'The embedding, or the class probabilities (base64 with encoding_format base64).' })
  data!: number[] | string;
}

export class PoolingResponseDto extends PoolingListFieldsDto implements Omit<PoolingResponse, 'usage'> {
  @ApiProperty({ example: 'pool-3f2a…', description: 'pool-<X-Request-Id, request_id or a random id>.' })
  id!: string;
  @ApiProperty({ type: () => PoolingDataDto, isArray: true, description: 'One pooled output per input, in order.' })
  data!: PoolingDataDto[];
  @ApiProperty({ type: () => UsageDto, description: 'Prompt tokens of all inputs.' })
  usage!: UsageDto;
}
