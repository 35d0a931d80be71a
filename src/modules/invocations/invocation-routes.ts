// POST /invocations (SageMaker) picks the endpoint by the body's shape, as vLLM does. One entry
// per endpoint: the DTO it validates against and the serving class that answers it.

import type { Type } from '@nestjs/common';
import { ChatServing } from '../../serving/chat-serving';
import { CompletionServing } from '../../serving/completion-serving';
import { ChatRequestDto } from '../chat/dto/chat-request.dto';
import { CompletionRequestDto } from '../completions/dto/completion-request.dto';

export interface InvocationRoute {
  /** vLLM's request type name (in the error listing what was expected). */
  name: string;
  matches(body: Record<string, unknown>): boolean;
  dto: Type<object>;
  serving: Type<ChatServing | CompletionServing>;
}

export const INVOCATION_ROUTES: InvocationRoute[] = [
  { name: 'ChatCompletionRequest', matches: (b) => 'messages' in b, dto: ChatRequestDto, serving: ChatServing },
  { name: 'CompletionRequest', matches: (b) => 'prompt' in b, dto: CompletionRequestDto, serving: CompletionServing },
];
