// /tokenize and /detokenize response bodies (documentation for the OpenAPI spec).

import { ApiProperty } from '@nestjs/swagger';
import type { TokenizeResponse } from '../../../serving/tokenize-serving';

export class TokenizeResponseDto implements TokenizeResponse {
  @ApiProperty({ type: 'integer', description: 'Number of tokens.' }) count!: number;
  @ApiProperty({ type: 'integer', description: 'The context length (prompt + output) in tokens.' }) max_model_len!: number;
  @ApiProperty({ type: 'integer', isArray: true, description: 'The token ids.' }) tokens!: number[];
  @ApiProperty({ type: 'string', isArray: true, nullable: true, description: 'With return_token_strs.' }) token_strs!: string[] | null;
}

export class DetokenizeResponseDto {
  @ApiProperty({ description: 'The text of the tokens.' }) prompt!: string;
}
