// POST /v1/embeddings (registered for embedding models only).

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiBodyExample, SERVED_MODEL } from '../../common/api-docs.decorators';
import { disconnectSignal } from '../../common/sse';
import { responseIdBase } from '../../common/request-id';
import { EmbeddingServing } from '../../serving/pooling/embedding-serving';
import { EmbeddingRequestDto } from './dto/embedding-request.dto';
import { EmbeddingResponseDto } from './dto/embedding-response.dto';

@ApiTags('embeddings')
@Controller()
export class EmbeddingsController {
  constructor(private readonly serving: EmbeddingServing) {}

  @Post('v1/embeddings')
  @HttpCode(200)
  @ApiOperation({ summary: 'Embeddings', description: "OpenAI's Embeddings API with vLLM's extras (messages input, dimensions, normalize, base64)." })
  @ApiOkResponse({ type: EmbeddingResponseDto })
  @ApiBodyExample({ model: SERVED_MODEL, input: ['The quick brown fox', 'A lazy dog'] })
  async createEmbedding(@Body() body: EmbeddingRequestDto, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    // Already JSON (serving writes the float lists itself): sent as it is.
    const json = await this.serving.createJson(body, responseIdBase(request, body.request_id), disconnectSignal(reply));
    reply.type('application/json; charset=utf-8');
    return json;
  }
}
