// POST /classify (registered for classification models only).

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiBodyExample, SERVED_MODEL } from '../../common/api-docs.decorators';
import { disconnectSignal } from '../../common/sse';
import { responseIdBase } from '../../common/request-id';
import { ClassifyServing, type ClassificationResponse } from '../../serving/pooling/classify-serving';
import { ClassifyRequestDto } from './dto/classify-request.dto';
import { ClassificationResponseDto } from './dto/classify-response.dto';

@ApiTags('classify')
@Controller()
export class ClassifyController {
  constructor(private readonly serving: ClassifyServing) {}

  @Post('classify')
  @HttpCode(200)
  @ApiOperation({ summary: 'Classify texts', description: 'Class probabilities and the most likely label of each input.' })
  @ApiOkResponse({ type: ClassificationResponseDto })
  @ApiBodyExample({ model: SERVED_MODEL, input: ['The quick brown fox', 'A lazy dog'] })
  createClassify(@Body() body: ClassifyRequestDto, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<ClassificationResponse> {
    return this.serving.create(body, responseIdBase(request, body.request_id), disconnectSignal(reply));
  }
}
