// /classify response body (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { ClassificationData, ClassificationResponse } from '../../../serving/pooling/classify-serving';
import { UsageDto } from '../../../common/dto/response-fields.dto';

export class ClassificationDataDto implements ClassificationData {
  @ApiProperty({ type: 'integer' }) index!: number;
  @ApiProperty({ type: 'string', nullable: true, description: 'id2label of the most likely class.' }) label!: string | null;
  @ApiProperty({ type: 'number', isArray: true }) probs!: number[];
  @ApiProperty({ type: 'integer' }) num_classes!: number;
}

export class ClassificationResponseDto implements ClassificationResponse {
  @ApiProperty({ example: 'classify-3f2a…' }) id!: string;
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: 'integer' }) created!: number;
  @ApiProperty() model!: string;
  @ApiProperty({ type: () => ClassificationDataDto, isArray: true }) data!: ClassificationDataDto[];
  @ApiProperty({ type: () => UsageDto }) usage!: UsageDto;
}
