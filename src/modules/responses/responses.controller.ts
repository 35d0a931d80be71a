// /v1/responses: create (JSON, typed SSE events, or background), retrieve (or follow a background
// run's events), input_items, cancel and delete. The serving layer does the work.

import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ApiBodyExample, ApiEventStream, SERVED_MODEL } from '../../common/api-docs.decorators';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { responseIdBase } from '../../common/request-id';
import { respond } from '../../common/respond';
import { SseStream, type SseOptions } from '../../common/sse';
import { RequestValidationError } from '../../engine/errors';
import { ResponsesServing, type InputItemList } from '../../serving/responses/responses-serving';
import type { ResponseObject } from '../../serving/responses/protocol';
import { ResponsesRequestDto } from './dto/responses-request.dto';
import { DeletedResponseDto, InputItemListDto, ResponsesResponseDto, ResponsesStreamEventDto } from './dto/responses-response.dto';

/** OpenAI's typed stream: an `event:` line per frame, no [DONE]. */
const TYPED_EVENTS: SseOptions = { eventOf: (frame) => (frame as { type?: string }).type, doneMarker: false };

const STREAM_DESCRIPTION =
  'A response object, or (stream) server-sent events with `event: <type>` lines: response.created, response.in_progress, then per ' +
  'output item response.output_item.added, its deltas and response.output_item.done — a message: response.content_part.added, ' +
  'response.output_text.delta …, response.output_text.done, response.content_part.done; a reasoning item (--reasoning-parser): ' +
  'response.content_part.added, response.reasoning_text.delta …, response.reasoning_text.done, response.content_part.done; a ' +
  'function_call: response.function_call_arguments.delta …, response.function_call_arguments.done — and last ' +
  'response.completed (or response.incomplete / response.failed).';

function optionalInt(value: string | undefined, param: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new RequestValidationError(`${param} must be an integer.`, param);
  return n;
}

function optionalBool(value: string | undefined, param: string): boolean {
  if (value === undefined || value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw new RequestValidationError(`${param} must be true or false.`, param);
}

@ApiTags('responses')
@Controller('v1/responses')
export class ResponsesController {
  constructor(private readonly serving: ResponsesServing) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Create a response', description: "OpenAI Responses API with vLLM's extra parameters; typed SSE events when stream is true." })
  @ApiOkResponse({ type: ResponsesResponseDto, description: STREAM_DESCRIPTION })
  @ApiEventStream(ResponsesStreamEventDto)
  @ApiBodyExample({ model: SERVED_MODEL, input: 'Tell me a story.', max_output_tokens: 16 })
  async createResponse(@Body() body: ResponsesRequestDto, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    // vLLM: a body request_id is the response id as sent; without one the id is resp_<X-Request-Id or random>.
    const prepared = await this.serving.prepare(body, responseIdBase(request, null));
    if (!prepared.background) {
      await respond(reply, this.serving, prepared, prepared.stream, TYPED_EVENTS);
      return;
    }
    const queued = await this.serving.startBackground(prepared);
    if (!prepared.stream) {
      await reply.status(200).send(queued);
      return;
    }
    // The client follows the run; leaving stops the following, not the run.
    const sse = new SseStream(reply, TYPED_EVENTS);
    await sse.pipe(this.serving.follow(prepared.id, null, sse.signal));
  }

  @Get(':response_id')
  @ApiOperation({ summary: 'Retrieve a response', description: 'A stored response; with stream=true, the events of a background run this server is running.' })
  @ApiQuery({ name: 'stream', required: false, type: 'boolean', description: 'Stream the background run\'s events (from this server).' })
  @ApiQuery({ name: 'starting_after', required: false, type: 'integer', description: 'With stream: only events after this sequence number.' })
  @ApiOkResponse({ type: ResponsesResponseDto, description: 'The response object, or (stream) its events.' })
  async getResponse(
    @Param('response_id') id: string,
    @Query('stream') stream: string | undefined,
    @Query('starting_after') startingAfter: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const response: ResponseObject = await this.serving.retrieve(id);
    if (!optionalBool(stream, 'stream')) {
      await reply.status(200).send(response);
      return;
    }
    const events = this.serving.follow(id, optionalInt(startingAfter, 'starting_after') ?? null);
    const sse = new SseStream(reply, TYPED_EVENTS);
    await sse.pipe(events);
  }

  @Get(':response_id/input_items')
  @ApiOperation({ summary: 'List input items', description: 'The input items of a stored response (newest first by default).' })
  @ApiQuery({ name: 'limit', required: false, type: 'integer', description: '1-100, default 20.' })
  @ApiQuery({ name: 'order', required: false, enum: ['asc', 'desc'], description: 'Default desc.' })
  @ApiQuery({ name: 'after', required: false, type: 'string', description: 'Item id to list after.' })
  @ApiQuery({ name: 'before', required: false, type: 'string', description: 'Item id to list before.' })
  @ApiOkResponse({ type: InputItemListDto })
  async listInputItems(
    @Param('response_id') id: string,
    @Query('limit') limit: string | undefined,
    @Query('order') order: string | undefined,
    @Query('after') after: string | undefined,
    @Query('before') before: string | undefined,
  ): Promise<InputItemList> {
    if (order !== undefined && order !== 'asc' && order !== 'desc') throw new RequestValidationError("order must be 'asc' or 'desc'.", 'order');
    return this.serving.inputItems(id, { limit: optionalInt(limit, 'limit'), order, after, before });
  }

  @Post(':response_id/cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel a response', description: 'Stops a queued or in-progress background response (400 once it has finished).' })
  @ApiOkResponse({ type: ResponsesResponseDto })
  async cancelResponse(@Param('response_id') id: string): Promise<ResponseObject> {
    return this.serving.cancel(id);
  }

  @Delete(':response_id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Delete a response', description: 'Removes a stored response (a running background one is stopped).' })
  @ApiOkResponse({ type: DeletedResponseDto })
  async deleteResponse(@Param('response_id') id: string): Promise<DeletedResponseDto> {
    return this.serving.delete(id);
  }
}
