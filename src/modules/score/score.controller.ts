// POST /score, /v1/score, /rerank, /v1/rerank and /v2/rerank (registered for embedding models
// and single-label classifiers, as vLLM's enable_scoring_api decides).

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiBodyExample, SERVED_MODEL } from '../../common/api-docs.decorators';
import { disconnectSignal } from '../../common/sse';
import { responseIdBase } from '../../common/request-id';
import { ScoreServing, type RerankResponse, type ScoreResponse } from '../../serving/pooling/score-serving';
import { RerankRequestDto, ScoreRequestDto } from './dto/score-request.dto';
import { RerankResponseDto, ScoreResponseDto } from './dto/score-response.dto';

@ApiTags('score')
@Controller()
export class ScoreController {
  constructor(private readonly serving: ScoreServing) {}

  @Post(['score', 'v1/score'])
  @HttpCode(200)
  @ApiOperation({ summary: 'Score text pairs', description: 'text_1 against text_2 (1:1, 1:N or N:N): a cross-encoder\'s score, or the cosine similarity of embeddings.' })
  @ApiOkResponse({ type: ScoreResponseDto })
  @ApiBodyExample({ model: SERVED_MODEL, text_1: 'What is the capital of France?', text_2: ['Paris is the capital of France.', 'Berlin is in Germany.'] })
  createScore(@Body() body: ScoreRequestDto, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<ScoreResponse> {
    return this.serving.score(body, responseIdBase(request, body.request_id), disconnectSignal(reply));
  }

  @Post(['rerank', 'v1/rerank', 'v2/rerank'])
  @HttpCode(200)
  @ApiOperation({ summary: 'Rerank documents', description: 'Jina / Cohere rerank API: documents scored against the query, best first.' })
  @ApiOkResponse({ type: RerankResponseDto })
  @ApiBodyExample({ model: SERVED_MODEL, query: 'What is the capital of France?', documents: ['Paris is the capital of France.', 'Berlin is in Germany.'], top_n: 1 })
  doRerank(@Body() body: RerankRequestDto, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<RerankResponse> {
    return this.serving.rerank(body, responseIdBase(request, body.request_id), disconnectSignal(reply));
  }
}
