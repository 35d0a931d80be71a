// POST /v1/completions: one handler branching on `stream`; the serving layer does the work.

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiBodyExample, ApiEventStream, SERVED_MODEL } from '../../common/api-docs.decorators';
import { respond } from '../../common/respond';
import { CompletionServing } from '../../serving/completion-serving';
import { responseIdBase } from '../../common/request-id';
import { CompletionRequestDto } from './dto/completion-request.dto';
import { CompletionResponseDto, CompletionStreamResponseDto } from './dto/completion-response.dto';

@ApiTags('completions')
@Controller()
export class CompletionsController {
  constructor(private readonly serving: CompletionServing) {}

  @Post('v1/completions')
  @HttpCode(200)
  @ApiOperation({ summary: 'Text completion', description: 'OpenAI Completions API with vLLM\'s extra parameters; SSE when stream is true.' })
  @ApiOkResponse({
    type: CompletionResponseDto,
    description: 'A text_completion object, or (stream) an event stream of text_completion chunks ending with `data: [DONE]`.',
  })
  @ApiEventStream(CompletionStreamResponseDto)
  @ApiBodyExample({ model: SERVED_MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0 })
  async createCompletion(@Body() body: CompletionRequestDto, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const prepared = await this.serving.prepare(body, responseIdBase(request, body.request_id));
    await respond(reply, this.serving, prepared, !!body.stream);
  }
}
