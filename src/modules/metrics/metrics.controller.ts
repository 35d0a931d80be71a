// GET /metrics: Prometheus text format (text/plain; version=0.0.4).

import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { MetricsService } from './metrics.service';

@ApiTags('metrics')
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @Header('cache-control', 'no-cache')
  @ApiOperation({ summary: 'Prometheus metrics', description: "vLLM's metric names (vllm:num_requests_running, vllm:generation_tokens_total, …) plus HTTP metrics." })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus metrics (vLLM names)', schema: { type: 'string' } })
  async scrapeMetrics(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    const { contentType, body } = await this.metrics.scrape();
    reply.header('content-type', contentType);
    return body;
  }
}
