// POST /v1/completions/derender and /v1/chat/completions/derender (with --enable-scale-out).
// One path, two body forms told apart by `stream` (as vLLM's union): the body is validated
// against the matching DTO with the app's own ValidationPipe, so errors read the same.

import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { RequestValidationPipe } from '../../common/validation';
import type { ChatChunk, ChatResponse } from '../../serving/chat-serving';
import type { CompletionChunk, CompletionResponse } from '../../serving/completion-serving';
import {
  DerenderChatRequestDto,
  DerenderChatStreamRequestDto,
  DerenderCompletionRequestDto,
  DerenderCompletionStreamRequestDto,
  DerenderStreamStateDto,
} from './dto/derender-request.dto';
import { DerenderStreamService, type DerenderStreamResult } from './derender-stream.service';
import { DerenderService } from './derender.service';

const pipe = new RequestValidationPipe();

function validated<T extends object>(raw: unknown, metatype: new () => T): T {
  return pipe.transform(raw, { type: 'body', metatype }) as T;
}

const isStreamForm = (raw: unknown): boolean => typeof raw === 'object' && raw !== null && (raw as { stream?: unknown }).stream === true;

const STREAM_NOTE = 'With stream: true the body carries one generate stream chunk and stream_state; the answer is JSON {chunk, stream_state} (not SSE).';

@ApiTags('scale-out')
@ApiExtraModels(DerenderCompletionRequestDto, DerenderCompletionStreamRequestDto, DerenderChatRequestDto, DerenderChatStreamRequestDto, DerenderStreamStateDto)
@Controller()
export class DerenderController {
  constructor(
    private readonly derender: DerenderService,
    private readonly streams: DerenderStreamService,
  ) {}

  @Post('v1/completions/derender')
  @HttpCode(200)
  @ApiOperation({ summary: 'Derender completion responses', description: `Generate responses (output_mode tokens) to a text_completion. ${STREAM_NOTE}` })
  @ApiBody({ schema: { oneOf: [{ $ref: getSchemaPath(DerenderCompletionRequestDto) }, { $ref: getSchemaPath(DerenderCompletionStreamRequestDto) }] } })
  @ApiOkResponse({ description: 'A text_completion object, or {chunk: text_completion chunk, stream_state}.' })
  derenderCompletion(@Body() raw: unknown): CompletionResponse | DerenderStreamResult<CompletionChunk> {
    if (isStreamForm(raw)) return this.streams.completionStream(validated(raw, DerenderCompletionStreamRequestDto));
    return this.derender.completion(validated(raw, DerenderCompletionRequestDto));
  }

  @Post('v1/chat/completions/derender')
  @HttpCode(200)
  @ApiOperation({ summary: 'Derender a chat response', description: `A generate response (output_mode tokens) to a chat.completion. ${STREAM_NOTE}` })
  @ApiBody({ schema: { oneOf: [{ $ref: getSchemaPath(DerenderChatRequestDto) }, { $ref: getSchemaPath(DerenderChatStreamRequestDto) }] } })
  @ApiOkResponse({ description: 'A chat.completion object, or {chunk: chat.completion.chunk, stream_state}.' })
  derenderChat(@Body() raw: unknown): ChatResponse | DerenderStreamResult<ChatChunk> {
    if (isStreamForm(raw)) return this.streams.chatStream(validated(raw, DerenderChatStreamRequestDto));
    return this.derender.chat(validated(raw, DerenderChatRequestDto));
  }
}
