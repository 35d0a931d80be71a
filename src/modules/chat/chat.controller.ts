// POST /v1/chat/completions (JSON or SSE by `stream`) and POST /v1/chat/completions/batch.

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiBodyExample, ApiEventStream, SERVED_MODEL } from '../../common/api-docs.decorators';
import { respond } from '../../common/respond';
import { ChatServing } from '../../serving/chat-serving';
import { responseIdBase } from '../../common/request-id';
import { BatchChatRequestDto, ChatRequestDto } from './dto/chat-request.dto';
import { ChatResponseDto, ChatStreamResponseDto } from './dto/chat-response.dto';

@ApiTags('chat')
@Controller()
export class ChatController {
  constructor(private readonly serving: ChatServing) {}

  @Post('v1/chat/completions')
  @HttpCode(200)
  @ApiOperation({ summary: 'Chat completion', description: 'OpenAI Chat Completions API with vLLM\'s extra parameters; SSE when stream is true.' })
  @ApiOkResponse({
    type: ChatResponseDto,
    description: 'A chat.completion object, or (stream) an event stream of chat.completion.chunk objects ending with `data: [DONE]`.',
  })
  @ApiEventStream(ChatStreamResponseDto)
  @ApiBodyExample({ model: SERVED_MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], max_completion_tokens: 16, temperature: 0 })
  async createChatCompletion(@Body() body: ChatRequestDto, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const prepared = await this.serving.prepare(body, responseIdBase(request, body.request_id));
    await respond(reply, this.serving, prepared, !!body.stream);
  }

  @Post('v1/chat/completions/batch')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Batch chat completion',
    description: 'Several conversations sharing the sampling fields: one response, choice i = conversation i, usage summed.',
  })
  @ApiOkResponse({ type: ChatResponseDto, description: 'A chat.completion object with one choice per conversation.' })
  @ApiBodyExample({
    model: SERVED_MODEL,
    messages: [[{ role: 'user', content: 'Once upon a time' }], [{ role: 'user', content: 'The little dog' }]],
    max_completion_tokens: 16,
    temperature: 0,
  })
  async createBatchChatCompletion(
    @Body() body: BatchChatRequestDto,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const prepared = await this.serving.prepare(body, responseIdBase(request, body.request_id), true);
    await respond(reply, this.serving, prepared, false);
  }
}
