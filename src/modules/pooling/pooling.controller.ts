// POST /pooling (registered for every pooling model). vLLM leaves it outside its guarded
// prefixes; ortllm's guard covers it like every other model route.

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiBodyExample, SERVED_MODEL } from '../../common/api-docs.decorators';
import { disconnectSignal } from '../../common/sse';
import { responseIdBase } from '../../common/request-id';
import { PoolingServing, type PoolingResponse } from '../../serving/pooling/pooling-serving';
import { PoolingRequestDto } from './dto/pooling-request.dto';
import { PoolingResponseDto } from './dto/pooling-response.dto';

@ApiTags('pooling')
@Controller()
export class PoolingController {
  constructor(private readonly serving: PoolingServing) {}

  @Post('pooling')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pooled model output', description: "The pooled vector of each input: an embedding model's embedding or a classifier's probabilities." })
  @ApiOkResponse({ type: PoolingResponseDto })
  @ApiBodyExample({ model: SERVED_MODEL, input: 'The quick brown fox' })
  createPooling(@Body() body: PoolingRequestDto, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<PoolingResponse> {
    return this.serving.create(body, responseIdBase(request, body.request_id), disconnectSignal(reply));
  }
}
