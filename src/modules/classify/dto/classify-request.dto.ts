// POST /classify body.

import { ApiSchema, IntersectionType } from '@nestjs/swagger';
import type { ClassifyRequestBody } from '../../../serving/pooling/classify-serving';
import { ActivationFieldsDto, PoolingInputFieldsDto } from '../../pooling/dto/pooling-fields.dto';

@ApiSchema({ name: 'ClassificationRequest' })
export class ClassifyRequestDto extends IntersectionType(PoolingInputFieldsDto, ActivationFieldsDto) implements ClassifyRequestBody {}
