// POST /invocations (SageMaker) picks the endpoint by the body's shape, as vLLM does. One entry
// per endpoint, in vLLM's order (the first whose shape matches wins): when the served model has it,
// the DTO it validates against, the serving class that answers it, how it answers, and (for the
// OpenAPI document) its response and, when it streams, its SSE frame.

import type { Type } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { respond, type GenerationServing } from '../../common/respond';
import { disconnectSignal } from '../../common/sse';
import type { EngineClient } from '../../engine/types';
import { ChatServing } from '../../serving/chat-serving';
import { CompletionServing } from '../../serving/completion-serving';
import { ClassifyServing } from '../../serving/pooling/classify-serving';
import { EmbeddingServing } from '../../serving/pooling/embedding-serving';
import { PoolingServing } from '../../serving/pooling/pooling-serving';
import { ScoreServing } from '../../serving/pooling/score-serving';
import type { ServingOptions } from '../../serving/serving-options';
import { ChatRequestDto } from '../chat/dto/chat-request.dto';
import { ChatResponseDto, ChatStreamResponseDto } from '../chat/dto/chat-response.dto';
import { ClassifyRequestDto } from '../classify/dto/classify-request.dto';
import { ClassificationResponseDto } from '../classify/dto/classify-response.dto';
import { CompletionRequestDto } from '../completions/dto/completion-request.dto';
import { CompletionResponseDto, CompletionStreamResponseDto } from '../completions/dto/completion-response.dto';
import { EmbeddingRequestDto } from '../embeddings/dto/embedding-request.dto';
import { EmbeddingResponseDto } from '../embeddings/dto/embedding-response.dto';
import { PoolingRequestDto } from '../pooling/dto/pooling-request.dto';
import { PoolingResponseDto } from '../pooling/dto/pooling-response.dto';
import { RerankRequestDto, ScoreRequestDto } from '../score/dto/score-request.dto';
import { RerankResponseDto, ScoreResponseDto } from '../score/dto/score-response.dto';
import { classifyRoutes, embeddingRoutes, openAiRoutes, poolingRoutes, scoreRoutes, type RoutePredicate } from '../served-routes';

/** Answers a validated body on `reply`; `idBase` is the response id's base (X-Request-Id or request_id). */
type Answer<S> = (serving: S, dto: never, idBase: string, reply: FastifyReply) => Promise<void>;

export interface InvocationRoute<S = unknown> {
  /** vLLM's request type name (in the error listing what was expected). */
  name: string;
  /** Whether the served model has this endpoint (the same predicate that registers its route). */
  when: RoutePredicate;
  matches(body: Record<string, unknown>): boolean;
  dto: Type<object>;
  /** Built like every serving class (serving-provider.ts). */
  serving: new (engine: EngineClient, opts: ServingOptions) => S;
  answer: Answer<S>;
  response: Type<object>;
  /** The SSE frame when `stream: true` streams. */
  frame?: Type<object>;
}

/** A serving class that prepares a validated body (tokenizing may run off the HTTP thread), then answers it. */
type PreparingServing<P> = GenerationServing<P, unknown, unknown> & { prepare(body: never, idBase: string): Promise<P> };

/** A generation endpoint: one JSON body, or SSE frames with `stream: true`. */
function generation<P>(): Answer<PreparingServing<P>> {
  return async (serving, dto, idBase, reply) => {
    await respond(reply, serving, await serving.prepare(dto, idBase), !!(dto as { stream?: boolean | null }).stream);
  };
}

/** A pooling endpoint: one JSON body; a client that goes away aborts its engine requests. */
function pooled<S, D>(call: (serving: S, dto: D, idBase: string, signal: AbortSignal) => Promise<unknown>): Answer<S> {
  return async (serving, dto, idBase, reply) => {
    await reply.status(200).send(await call(serving, dto, idBase, disconnectSignal(reply)));
  };
}

const has = (...fields: string[]) => (body: Record<string, unknown>) => fields.some((f) => f in body);

/** An entry, its serving class's type checked against its answer. */
const route = <S>(entry: InvocationRoute<S>): InvocationRoute => entry as InvocationRoute;

export const INVOCATION_ROUTES: InvocationRoute[] = [
  route({
    name: 'ChatCompletionRequest',
    when: openAiRoutes,
    matches: has('messages'),
    dto: ChatRequestDto,
    serving: ChatServing,
    answer: generation(),
    response: ChatResponseDto,
    frame: ChatStreamResponseDto,
  }),
  route({
    name: 'CompletionRequest',
    when: openAiRoutes,
    matches: has('prompt'),
    dto: CompletionRequestDto,
    serving: CompletionServing,
    answer: generation(),
    response: CompletionResponseDto,
    frame: CompletionStreamResponseDto,
  }),
  route({
    name: 'EmbeddingRequest',
    when: embeddingRoutes,
    matches: has('input', 'messages'),
    dto: EmbeddingRequestDto,
    serving: EmbeddingServing,
    answer: pooled((s: EmbeddingServing, dto: EmbeddingRequestDto, id, signal) => s.create(dto, id, signal)),
    response: EmbeddingResponseDto,
  }),
  route({
    name: 'ClassificationRequest',
    when: classifyRoutes,
    matches: has('input', 'messages'),
    dto: ClassifyRequestDto,
    serving: ClassifyServing,
    answer: pooled((s: ClassifyServing, dto: ClassifyRequestDto, id, signal) => s.create(dto, id, signal)),
    response: ClassificationResponseDto,
  }),
  route({
    name: 'RerankRequest',
    when: scoreRoutes,
    matches: has('query'),
    dto: RerankRequestDto,
    serving: ScoreServing,
    answer: pooled((s: ScoreServing, dto: RerankRequestDto, id, signal) => s.rerank(dto, id, signal)),
    response: RerankResponseDto,
  }),
  route({
    name: 'ScoreRequest',
    when: scoreRoutes,
    matches: has('text_1', 'text_2'),
    dto: ScoreRequestDto,
    serving: ScoreServing,
    answer: pooled((s: ScoreServing, dto: ScoreRequestDto, id, signal) => s.score(dto, id, signal)),
    response: ScoreResponseDto,
  }),
  // vLLM's last resort for a pooling model; every body it takes reaches an earlier entry today
  // (embed and classify are the only pooling tasks), so it is listed for completeness of the error.
  route({
    name: 'PoolingRequest',
    when: poolingRoutes,
    matches: has('input', 'messages'),
    dto: PoolingRequestDto,
    serving: PoolingServing,
    answer: pooled((s: PoolingServing, dto: PoolingRequestDto, id, signal) => s.create(dto, id, signal)),
    response: PoolingResponseDto,
  }),
];
