// POST /invocations (SageMaker) picks the endpoint by the body's shape, as vLLM does. One entry
// per endpoint: the DTO it validates against, the serving class that answers it, and (for the
// OpenAPI document) its response and, when it streams, its SSE frame.

import type { Type } from '@nestjs/common';
import { ChatServing } from '../../serving/chat-serving';
import { CompletionServing } from '../../serving/completion-serving';
import { ChatRequestDto } from '../chat/dto/chat-request.dto';
import { ChatResponseDto, ChatStreamResponseDto } from '../chat/dto/chat-response.dto';
import { CompletionRequestDto } from '../completions/dto/completion-request.dto';
import { CompletionResponseDto, CompletionStreamResponseDto } from '../completions/dto/completion-response.dto';

export interface InvocationRoute {
  /** vLLM's request type name (in the error listing what was expected). */
  name: string;
  matches(body: Record<string, unknown>): boolean;
  dto: Type<object>;
  serving: Type<ChatServing | CompletionServing>;
  response: Type<object>;
  /** The SSE frame when `stream: true` streams. */
  frame?: Type<object>;
}

export const INVOCATION_ROUTES: InvocationRoute[] = [
  { name: 'ChatCompletionRequest', matches: (b) => 'messages' in b, dto: ChatRequestDto, serving: ChatServing, response: ChatResponseDto, frame: ChatStreamResponseDto },
  {
    name: 'CompletionRequest',
    matches: (b) => 'prompt' in b,
    dto: CompletionRequestDto,
    serving: CompletionServing,
    response: CompletionResponseDto,
    frame: CompletionStreamResponseDto,
  },
];
