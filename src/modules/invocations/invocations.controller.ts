// POST /invocations: the SageMaker entry point. The body's shape picks the endpoint
// (invocation-routes.ts); the request is validated and answered exactly as on that endpoint,
// streaming included.

import { Body, Controller, HttpCode, Inject, Post, Req, Res, type PipeTransform, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ApiBody, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OpenAIHttpError } from '../../serving/openai-error';
import { ApiBodyExample, ApiEventStream, SERVED_MODEL } from '../../common/api-docs.decorators';
import { createBodyPipes, validateBody } from '../../common/body-pipes';
import type { ServerConfig } from '../../config/server-config';
import { SERVER_CONFIG } from '../engine/engine.tokens';
import { responseIdBase } from '../../common/request-id';
import { respond, type GenerationServing } from '../../common/respond';
import { INVOCATION_ROUTES } from './invocation-routes';

/** What every routed serving class offers: prepare a validated body (tokenizing may run off the HTTP thread), then answer it. */
type InvocableServing = GenerationServing<unknown, unknown, unknown> & { prepare(body: unknown, idBase: string): Promise<unknown> };

const refs = (models: Type<object>[]) => models.map((model) => ({ $ref: getSchemaPath(model) }));
const frames = INVOCATION_ROUTES.flatMap((r) => (r.frame ? [r.frame] : [])) as [Type, ...Type[]];

@ApiTags('invocations')
@ApiExtraModels(...INVOCATION_ROUTES.flatMap((r) => [r.dto, r.response]))
@Controller()
export class InvocationsController {
  private readonly bodyPipes: PipeTransform[];

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(SERVER_CONFIG) config: ServerConfig,
  ) {
    this.bodyPipes = createBodyPipes(config.unknownRequestFields);
  }

  @Post('invocations')
  @HttpCode(200)
  @ApiOperation({ summary: 'SageMaker invocations', description: 'Routed by the body: `messages` → chat completions, `prompt` → completions.' })
  // anyOf: the request types overlap (the body's shape, not the schema, picks the route).
  @ApiBody({ schema: { anyOf: refs(INVOCATION_ROUTES.map((r) => r.dto)) } })
  @ApiOkResponse({ description: 'The response of the endpoint the body was routed to (JSON or SSE).', schema: { oneOf: refs(INVOCATION_ROUTES.map((r) => r.response)) } })
  @ApiEventStream(...frames)
  @ApiBodyExample({ model: SERVED_MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0 })
  async invocations(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const fields = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const route = INVOCATION_ROUTES.find((r) => r.matches(fields));
    if (!route) {
      throw OpenAIHttpError.badRequest(`Cannot find suitable handler for request. Expected one of: ${INVOCATION_ROUTES.map((r) => r.name).join(', ')}`);
    }
    const dto = (await validateBody(this.bodyPipes, fields, route.dto)) as { request_id?: string | null; stream?: boolean | null };
    const serving = this.moduleRef.get<unknown, InvocableServing>(route.serving, { strict: false });
    await respond(reply, serving, await serving.prepare(dto, responseIdBase(request, dto.request_id)), !!dto.stream);
  }
}
