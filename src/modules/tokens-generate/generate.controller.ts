// POST /inference/v1/generate: one handler that branches on `stream` (SSE frames on the raw
// reply, or one JSON body). A client that disconnects aborts its engine request.

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { responseIdBase } from '../../common/request-id';
import { ApiBodyExample, ApiEventStream, SERVED_MODEL } from '../../common/api-docs.decorators';
import { respond } from '../../common/respond';
import { GenerateRequestDto } from './dto/generate-request.dto';
import { GenerateResponseDto, GenerateStreamResponseDto } from './dto/generate-response.dto';
import { GenerateServing } from '../../serving/generate/generate-serving';

@ApiTags('tokens')
@Controller()
export class GenerateController {
  constructor(private readonly serving: GenerateServing) {}

  @Post('inference/v1/generate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Tokens in, tokens out',
    description:
      'Generates from prompt token ids with engine sampling params. output_mode "tokens" (default) returns token ids; ' +
      '"text" also returns text. With stream: true, server-sent events of GenerateStreamResponse chunks end with `data: [DONE]`.',
  })
  @ApiOkResponse({ type: GenerateResponseDto, description: 'The generation (non-streaming), or an event stream of GenerateStreamResponse chunks.' })
  @ApiEventStream(GenerateStreamResponseDto)
  @ApiBodyExample({ model: SERVED_MODEL, token_ids: [72, 101, 108, 108, 111], sampling_params: { max_tokens: 16, temperature: 0 } })
  async generate(@Body() body: GenerateRequestDto, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const prepared = await this.serving.resolveAndPrepare(body, responseIdBase(request, body.request_id));
    await respond(reply, this.serving, prepared, prepared.stream);
  }
}
