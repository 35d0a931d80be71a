// /pooling response body (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { PoolingData, PoolingResponse } from '../../../serving/pooling/pooling-serving';
import { UsageDto } from '../../../common/dto/response-fields.dto';

export class PoolingDataDto implements PoolingData {
  @ApiProperty({ type: 'integer' }) index!: number;
  @ApiProperty({ enum: ['pooling'] }) object!: 'pooling';
  @ApiProperty({ oneOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string', description: 'base64' }], description: 'The embedding, or the class probabilities.' })
  data!: number[] | string;
}

export class PoolingResponseDto implements PoolingResponse {
  @ApiProperty({ example: 'pool-3f2a…' }) id!: string;
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: 'integer' }) created!: number;
  @ApiProperty() model!: string;
  @ApiProperty({ type: () => PoolingDataDto, isArray: true }) data!: PoolingDataDto[];
  @ApiProperty({ type: () => UsageDto }) usage!: UsageDto;
}
