// POST /score (/v1/score) and /rerank (/v1/rerank, /v2/rerank) bodies.

import { IntersectionType } from '@nestjs/swagger';
import type { RerankRequestBody, ScoreRequestBody } from '../../../serving/pooling/score-serving';
import { BoolField, IntField, StringField, StringListField, StringOrListField } from '../../../common/dto/api-field';
import { ActivationFieldsDto, PoolingCommonFieldsDto } from '../../pooling/dto/pooling-fields.dto';

export class ScoreRequestDto extends IntersectionType(PoolingCommonFieldsDto, ActivationFieldsDto) implements ScoreRequestBody {
  @StringOrListField({ description: 'The query (or queries, 1:1 with text_2).', required: true, example: 'What is the capital of France?' })
  text_1!: string | string[];

  @StringOrListField({ description: 'The text(s) scored against text_1.', required: true, example: ['Paris is the capital of France.', 'Berlin is in Germany.'] })
  text_2!: string | string[];
}

export class RerankRequestDto extends IntersectionType(PoolingCommonFieldsDto, ActivationFieldsDto) implements RerankRequestBody {
  @StringField({ description: 'The query the documents are ranked for.', required: true, example: 'What is the capital of France?' })
  query!: string;

  @StringListField({ description: 'The documents to rank.', required: true, example: ['Paris is the capital of France.', 'Berlin is in Germany.'] })
  documents!: string[];

  @IntField({ description: 'Return only the best N results (0 = all).', default: 0 })
  top_n?: number | null;

  @BoolField({ description: "Include each document's text in its result (Cohere's return_documents).", default: true })
  return_documents?: boolean | null;
}
