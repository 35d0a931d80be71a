// POST /pooling body: the embeddings fields plus the task to pool for.

import { IntersectionType } from '@nestjs/swagger';
import type { PoolingRequestBody } from '../../../serving/pooling/pooling-serving';
import { EnumField } from '../../../common/dto/api-field';
import { PoolingInputFieldsDto, VectorFieldsDto } from './pooling-fields.dto';

export class PoolingRequestDto extends IntersectionType(PoolingInputFieldsDto, VectorFieldsDto) implements PoolingRequestBody {
  @EnumField(['embed', 'classify'], { description: "The pooling task; default the model's (the only one it serves)." })
  task?: string | null;
}
