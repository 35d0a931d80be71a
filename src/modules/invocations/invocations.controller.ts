// POST /invocations: the SageMaker entry point. The body's shape picks the endpoint
// (invocation-routes.ts); the request is validated and answered exactly as on that endpoint,
// streaming included.

import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ApiBody, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OpenAIHttpError } from '../../serving/openai-error';
import { createValidationPipe } from '../../common/validation';
import { responseIdBase } from '../../common/request-id';
import { respond, type GenerationServing } from '../../common/respond';
import { INVOCATION_ROUTES } from './invocation-routes';

const pipe = createValidationPipe();

/** What every routed serving class offers: prepare a validated body, then answer it. */
type InvocableServing = GenerationServing<unknown, unknown, unknown> & { prepare(body: unknown, idBase: string): unknown };

@ApiTags('invocations')
@ApiExtraModels(...INVOCATION_ROUTES.map((r) => r.dto))
@Controller()
export class InvocationsController {
  constructor(private readonly moduleRef: ModuleRef) {}

  @Post('invocations')
  @HttpCode(200)
  @ApiOperation({ summary: 'SageMaker invocations', description: 'Routed by the body: `messages` → chat completions, `prompt` → completions.' })
  @ApiBody({ schema: { oneOf: INVOCATION_ROUTES.map((r) => ({ $ref: getSchemaPath(r.dto) })) } })
  @ApiOkResponse({ description: 'The response of the endpoint the body was routed to (JSON or SSE).' })
  async invocations(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const fields = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const route = INVOCATION_ROUTES.find((r) => r.matches(fields));
    if (!route) {
      throw OpenAIHttpError.badRequest(`Cannot find suitable handler for request. Expected one of: ${INVOCATION_ROUTES.map((r) => r.name).join(', ')}`);
    }
    const dto = (await pipe.transform(fields, { type: 'body', metatype: route.dto })) as { request_id?: string | null; stream?: boolean | null };
    const serving = this.moduleRef.get<unknown, InvocableServing>(route.serving, { strict: false });
    await respond(reply, serving, serving.prepare(dto, responseIdBase(request, dto.request_id)), !!dto.stream);
  }
}
