// POST /tokenize and POST /detokenize. vLLM leaves them outside its guarded prefixes; ortllm's
// guard covers every route but the probes, the docs and the legacy abort, so they need the key.

import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { TokenizeServing, type TokenizeResponse } from '../../serving/tokenize-serving';
import { DetokenizeRequestDto, TokenizeRequestDto } from './dto/tokenize-request.dto';
import { DetokenizeResponseDto, TokenizeResponseDto } from './dto/tokenize-response.dto';

@ApiTags('tokenize')
@Controller()
export class TokenizeController {
  constructor(private readonly serving: TokenizeServing) {}

  @Post('tokenize')
  @HttpCode(200)
  @ApiOperation({ summary: 'Tokenize a prompt or a chat conversation' })
  @ApiOkResponse({ type: TokenizeResponseDto })
  tokenize(@Body() body: TokenizeRequestDto): Promise<TokenizeResponse> {
    return this.serving.tokenize(body);
  }

  @Post('detokenize')
  @HttpCode(200)
  @ApiOperation({ summary: 'Turn token ids back into text' })
  @ApiOkResponse({ type: DetokenizeResponseDto })
  detokenize(@Body() body: DetokenizeRequestDto): Promise<{ prompt: string }> {
    return this.serving.detokenize(body);
  }
}
