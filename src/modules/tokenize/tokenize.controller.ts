// POST /tokenize and POST /detokenize. vLLM leaves them outside its guarded prefixes; ortllm's
// guard covers every route but the probes, the docs and the legacy abort, so they need the key.

import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { sendJson } from '../../common/json-response';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiBodyExample, SERVED_MODEL } from '../../common/api-docs.decorators';
import { TokenizeServing } from '../../serving/tokenize-serving';
import { DetokenizeRequestDto, TokenizeRequestDto } from './dto/tokenize-request.dto';
import { DetokenizeResponseDto, TokenizeResponseDto } from './dto/tokenize-response.dto';

@ApiTags('tokenize')
@Controller()
export class TokenizeController {
  constructor(private readonly serving: TokenizeServing) {}

  @Post('tokenize')
  @HttpCode(200)
  @ApiOperation({ summary: 'Tokenize a prompt or a chat conversation' })
  @ApiOkResponse({ type: TokenizeResponseDto, description: 'The token ids (and, with return_token_strs, their strings).' })
  @ApiBodyExample({ model: SERVED_MODEL, prompt: 'Once upon a time' })
  async tokenize(@Body() body: TokenizeRequestDto, @Res() reply: FastifyReply): Promise<void> {
    // Millions of token ids are written in pieces (sendJson), not in one JSON.stringify.
    await sendJson(reply, await this.serving.tokenize(body));
  }

  @Post('detokenize')
  @HttpCode(200)
  @ApiOperation({ summary: 'Turn token ids back into text' })
  @ApiOkResponse({ type: DetokenizeResponseDto, description: 'The text.' })
  @ApiBodyExample({ model: SERVED_MODEL, tokens: [72, 101, 108, 108, 111] })
  detokenize(@Body() body: DetokenizeRequestDto): Promise<{ prompt: string }> {
    return this.serving.detokenize(body);
  }
}
