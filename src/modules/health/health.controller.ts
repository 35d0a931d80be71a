// GET /health and GET|POST /ping: 200 with an empty body while the engine is alive, 503 when
// it is dead (vLLM). All are open without an API key (load balancers and probes call them).

import { applyDecorators, Controller, Get, HttpCode, Inject, Post, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '../../common/public.decorator';
import type { EngineClient } from '../../engine/types';
import { ENGINE_CLIENT } from '../engine/engine.tokens';

/** An open probe route answering 200/503 with an empty body. */
function ProbeRoute(route: MethodDecorator, summary: string): MethodDecorator {
  return applyDecorators(
    Public(),
    route,
    HttpCode(200),
    ApiOperation({ summary }),
    ApiResponse({ status: 200, description: 'Engine alive (empty body)' }),
    ApiResponse({ status: 503, description: 'Engine dead (empty body)' }),
  );
}

@ApiTags('health')
@Controller()
export class HealthController {
  constructor(@Inject(ENGINE_CLIENT) private readonly engine: EngineClient) {}

  @ProbeRoute(Get('health'), 'Liveness: 200 while the engine is alive, 503 when it is dead')
  health(@Res({ passthrough: true }) reply: FastifyReply): void {
    this.answer(reply);
  }

  @ProbeRoute(Get('ping'), 'Same as /health (SageMaker)')
  ping(@Res({ passthrough: true }) reply: FastifyReply): void {
    this.answer(reply);
  }

  @ProbeRoute(Post('ping'), 'Same as /health (SageMaker)')
  pingPost(@Res({ passthrough: true }) reply: FastifyReply): void {
    this.answer(reply);
  }

  private answer(reply: FastifyReply): void {
    if (!this.engine.health().alive) reply.status(503);
  }
}
