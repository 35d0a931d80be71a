// POST /v1/completions/derender and /v1/chat/completions/derender (with --enable-scale-out).
// One path, two body forms told apart by `stream` (as vLLM's union): the body is validated
// against the matching DTO with the app's own body pipes, so errors and unknown-field warnings
// read the same.

import { Body, Controller, HttpCode, Inject, Post, type PipeTransform, type Type } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { ApiBodyExample, SERVED_MODEL } from '../../common/api-docs.decorators';
import { createBodyPipes, validateBody } from '../../common/body-pipes';
import type { ServerConfig } from '../../config/server-config';
import type { ChatChunk, ChatResponse } from '../../serving/chat-serving';
import type { CompletionChunk, CompletionResponse } from '../../serving/completion-serving';
import {
  DerenderChatRequestDto,
  DerenderChatStreamRequestDto,
  DerenderCompletionRequestDto,
  DerenderCompletionStreamRequestDto,
} from './dto/derender-request.dto';
import { DerenderChatStreamResponseDto, DerenderCompletionStreamResponseDto } from './dto/derender-response.dto';
import { ChatResponseDto } from '../chat/dto/chat-response.dto';
import { CompletionResponseDto } from '../completions/dto/completion-response.dto';
import { DerenderStreamServing, type DerenderStreamResult } from '../../serving/derender/derender-stream-serving';
import { DerenderServing } from '../../serving/derender/derender-serving';
import { SERVER_CONFIG } from '../engine/engine.tokens';

const isStreamForm = (raw: unknown): boolean => typeof raw === 'object' && raw !== null && (raw as { stream?: unknown }).stream === true;

/** A finished output_mode "tokens" generate response, as /inference/v1/generate answers. */
const GENERATE_RESPONSE_EXAMPLE = {
  request_id: 'generate-tokens-42',
  choices: [{ index: 0, token_ids: [72, 101, 108, 108, 111], finish_reason: 'length' }],
};

const oneOfSchemas = (...models: Type[]) => ({ oneOf: models.map((model) => ({ $ref: getSchemaPath(model) })) });

const STREAM_NOTE = 'With stream: true the body carries one generate stream chunk and stream_state; the answer is JSON {chunk, stream_state} (not SSE).';

@ApiTags('scale-out')
@ApiExtraModels(
  DerenderCompletionRequestDto,
  DerenderCompletionStreamRequestDto,
  DerenderChatRequestDto,
  DerenderChatStreamRequestDto,
  CompletionResponseDto,
  DerenderCompletionStreamResponseDto,
  ChatResponseDto,
  DerenderChatStreamResponseDto,
)
@Controller()
export class DerenderController {
  private readonly bodyPipes: PipeTransform[];

  constructor(
    private readonly derender: DerenderServing,
    private readonly streams: DerenderStreamServing,
    @Inject(SERVER_CONFIG) config: ServerConfig,
  ) {
    this.bodyPipes = createBodyPipes(config.unknownRequestFields);
  }

  private validated<T>(raw: unknown, metatype: Type<T>): Promise<T> {
    return validateBody(this.bodyPipes, raw, metatype);
  }

  @Post('v1/completions/derender')
  @HttpCode(200)
  @ApiOperation({ summary: 'Derender completion responses', description: `Generate responses (output_mode tokens) to a text_completion. ${STREAM_NOTE}` })
  @ApiBody({ schema: oneOfSchemas(DerenderCompletionRequestDto, DerenderCompletionStreamRequestDto) })
  @ApiOkResponse({
    description: 'A text_completion object, or {chunk: text_completion chunk, stream_state}.',
    schema: oneOfSchemas(CompletionResponseDto, DerenderCompletionStreamResponseDto),
  })
  @ApiBodyExample({ model: SERVED_MODEL, generate_responses: [GENERATE_RESPONSE_EXAMPLE], prompt_tokens: [5] })
  async derenderCompletion(@Body() raw: unknown): Promise<CompletionResponse | DerenderStreamResult<CompletionChunk>> {
    if (isStreamForm(raw)) return this.streams.completionStream(await this.validated(raw, DerenderCompletionStreamRequestDto));
    return this.derender.completion(await this.validated(raw, DerenderCompletionRequestDto));
  }

  @Post('v1/chat/completions/derender')
  @HttpCode(200)
  @ApiOperation({ summary: 'Derender a chat response', description: `A generate response (output_mode tokens) to a chat.completion. ${STREAM_NOTE}` })
  @ApiBody({ schema: oneOfSchemas(DerenderChatRequestDto, DerenderChatStreamRequestDto) })
  @ApiOkResponse({
    description: 'A chat.completion object, or {chunk: chat.completion.chunk, stream_state}.',
    schema: oneOfSchemas(ChatResponseDto, DerenderChatStreamResponseDto),
  })
  @ApiBodyExample({ model: SERVED_MODEL, generate_response: GENERATE_RESPONSE_EXAMPLE, prompt_tokens: 5 })
  async derenderChat(@Body() raw: unknown): Promise<ChatResponse | DerenderStreamResult<ChatChunk>> {
    if (isStreamForm(raw)) return this.streams.chatStream(await this.validated(raw, DerenderChatStreamRequestDto));
    return this.derender.chat(await this.validated(raw, DerenderChatRequestDto));
  }
}
