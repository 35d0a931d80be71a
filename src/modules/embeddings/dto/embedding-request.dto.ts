// POST /v1/embeddings body: OpenAI's EmbeddingCreateParams plus vLLM's extras.

import { IntersectionType } from '@nestjs/swagger';
import type { EmbeddingRequestBody } from '../../../serving/pooling/embedding-serving';
import { PoolingInputFieldsDto, VectorFieldsDto } from '../../pooling/dto/pooling-fields.dto';

export class EmbeddingRequestDto extends IntersectionType(PoolingInputFieldsDto, VectorFieldsDto) implements EmbeddingRequestBody {}
