// /classify response body (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { ClassificationData, ClassificationResponse } from '../../../serving/pooling/classify-serving';
import { PoolingListFieldsDto, UsageDto } from '../../../common/dto/response-fields.dto';

export class ClassificationDataDto implements ClassificationData {
  @ApiProperty({ type: 'integer', description: 'Position of the input in the request.' })
  index!: number;
  @ApiProperty({ type: 'string', nullable: true, description: 'id2label of the most likely class.' })
  label!: string | null;
  @ApiProperty({ type: 'number', isArray: true, description: 'Class probabilities (the raw logits with use_activation false).' })
  probs!: number[];
  @ApiProperty({ type: 'integer', description: 'Number of classes.' })
  num_classes!: number;
}

export class ClassificationResponseDto extends PoolingListFieldsDto implements Omit<ClassificationResponse, 'usage'> {
  @ApiProperty({ example: 'classify-3f2a…', description: 'classify-<X-Request-Id, request_id or a random id>.' })
  id!: string;
  @ApiProperty({ type: () => ClassificationDataDto, isArray: true, description: 'One result per input, in order.' })
  data!: ClassificationDataDto[];
  @ApiProperty({ type: () => UsageDto, description: 'Prompt tokens of all inputs.' })
  usage!: UsageDto;
}
