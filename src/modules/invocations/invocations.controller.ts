// POST /invocations: the SageMaker entry point. The body's shape picks the endpoint among those
// the served model has (invocation-routes.ts); the request is validated and answered exactly as on
// that endpoint, streaming included.

import { Body, Controller, HttpCode, Inject, Post, Req, Res, type PipeTransform, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ApiBody, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OpenAIHttpError } from '../../serving/openai-error';
import { ApiBodyExample, ApiEventStream, SERVED_MODEL } from '../../common/api-docs.decorators';
import { createBodyPipes, validateBody } from '../../common/body-pipes';
import type { ServerConfig } from '../../config/server-config';
import { SERVED_MODEL_INFO, SERVER_CONFIG } from '../engine/engine.tokens';
import { responseIdBase } from '../../common/request-id';
import type { ServedModel } from '../served-routes';
import { INVOCATION_ROUTES, type InvocationRoute } from './invocation-routes';

const refs = (models: Type<object>[]) => models.map((model) => ({ $ref: getSchemaPath(model) }));
const frames = INVOCATION_ROUTES.flatMap((r) => (r.frame ? [r.frame] : [])) as [Type, ...Type[]];

@ApiTags('invocations')
@ApiExtraModels(...INVOCATION_ROUTES.flatMap((r) => [r.dto, r.response]))
@Controller()
export class InvocationsController {
  private readonly bodyPipes: PipeTransform[];
  /** The entries whose endpoint the served model has, in matching order. */
  private readonly routes: InvocationRoute[];

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(SERVER_CONFIG) config: ServerConfig,
    @Inject(SERVED_MODEL_INFO) servedModel: ServedModel,
  ) {
    this.bodyPipes = createBodyPipes(config.unknownRequestFields);
    this.routes = INVOCATION_ROUTES.filter((r) => r.when(config, servedModel));
  }

  @Post('invocations')
  @HttpCode(200)
  @ApiOperation({
    summary: 'SageMaker invocations',
    description:
      'Routed by the body to an endpoint the served model has: `messages` → chat completions, `prompt` → completions (generation models); ' +
      '`input` or `messages` → embeddings or classify, `query` → rerank, `text_1`/`text_2` → score (pooling models).',
  })
  // anyOf: the request types overlap (the body's shape, not the schema, picks the route), and so do
  // the pooling responses (id, object, created, model).
  @ApiBody({ schema: { anyOf: refs(INVOCATION_ROUTES.map((r) => r.dto)) } })
  @ApiOkResponse({ description: 'The response of the endpoint the body was routed to (JSON or SSE).', schema: { anyOf: refs(INVOCATION_ROUTES.map((r) => r.response)) } })
  @ApiEventStream(...frames)
  @ApiBodyExample({ model: SERVED_MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0 })
  async invocations(@Body() body: unknown, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const fields = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const route = this.routes.find((r) => r.matches(fields));
    if (!route) {
      throw OpenAIHttpError.badRequest(`Cannot find suitable handler for request. Expected one of: ${this.routes.map((r) => r.name).join(', ')}`);
    }
    const dto = (await validateBody(this.bodyPipes, fields, route.dto)) as { request_id?: string | null };
    const serving = this.moduleRef.get(route.serving, { strict: false });
    await route.answer(serving, dto as never, responseIdBase(request, dto.request_id), reply);
  }
}
