// POST /v1/completions/render and /v1/chat/completions/render (registered with --enable-scale-out).

import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiBodyExample, SERVED_MODEL } from '../../common/api-docs.decorators';
import { responseIdBase } from '../../common/request-id';
import { GenerateRequestDto } from '../tokens-generate/dto/generate-request.dto';
import { RenderChatRequestDto, RenderCompletionRequestDto } from './dto/render-request.dto';
import { RenderServing, type RenderedGenerateRequest } from '../../serving/render/render-serving';

@ApiTags('scale-out')
@Controller()
export class RenderController {
  constructor(private readonly render: RenderServing) {}

  @Post('v1/completions/render')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Render a completion request',
    description: 'Tokenizes the prompt(s) and resolves the sampling params: one GenerateRequest per prompt, for /inference/v1/generate.',
  })
  @ApiOkResponse({ type: GenerateRequestDto, isArray: true, description: 'One GenerateRequest per prompt.' })
  @ApiBodyExample({ model: SERVED_MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0 })
  renderCompletion(@Body() body: RenderCompletionRequestDto, @Req() request: FastifyRequest): Promise<RenderedGenerateRequest[]> {
    return this.render.renderCompletion(body, responseIdBase(request, body.request_id));
  }

  @Post('v1/chat/completions/render')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Render a chat request',
    description: 'Applies the chat template, tokenizes and resolves the sampling params: one GenerateRequest for /inference/v1/generate.',
  })
  @ApiOkResponse({ type: GenerateRequestDto, description: 'The GenerateRequest.' })
  @ApiBodyExample({ model: SERVED_MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], max_completion_tokens: 16, temperature: 0 })
  renderChat(@Body() body: RenderChatRequestDto, @Req() request: FastifyRequest): Promise<RenderedGenerateRequest> {
    return this.render.renderChat(body, responseIdBase(request, body.request_id));
  }
}
