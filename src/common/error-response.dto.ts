// OpenAPI shapes of the error bodies (documented on every operation by the docs module).

import { ApiProperty } from '@nestjs/swagger';

export class ErrorInfo {
  @ApiProperty({ example: 'The model `x` does not exist.', description: 'What went wrong.' })
  message!: string;
  @ApiProperty({ description: "vLLM's error type, e.g. BadRequestError, NotFoundError, or an HTTP reason phrase", example: 'NotFoundError' })
  type!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The offending request field', example: 'model' })
  param!: string | null;
  @ApiProperty({ description: 'The HTTP status', example: 404 })
  code!: number;
}

export class ErrorResponse {
  @ApiProperty({ type: ErrorInfo })
  error!: ErrorInfo;
}

export class UnauthorizedResponse {
  @ApiProperty({ enum: ['Unauthorized'], description: 'Always "Unauthorized".' })
  error!: 'Unauthorized';
}
