// POST /tokenize and POST /detokenize (open routes in vLLM: no API key needed).

import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../../common/public.decorator';
import { TokenizeServing, type TokenizeResponse } from '../../serving/tokenize-serving';
import { DetokenizeRequestDto, TokenizeRequestDto } from './dto/tokenize-request.dto';
import { DetokenizeResponseDto, TokenizeResponseDto } from './dto/tokenize-response.dto';

@ApiTags('tokenize')
@Controller()
export class TokenizeController {
  constructor(private readonly serving: TokenizeServing) {}

  @Post('tokenize')
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Tokenize a prompt or a chat conversation' })
  @ApiOkResponse({ type: TokenizeResponseDto })
  tokenize(@Body() body: TokenizeRequestDto): TokenizeResponse {
    return this.serving.tokenize(body);
  }

  @Post('detokenize')
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Turn token ids back into text' })
  @ApiOkResponse({ type: DetokenizeResponseDto })
  detokenize(@Body() body: DetokenizeRequestDto): { prompt: string } {
    return this.serving.detokenize(body);
  }
}
