// POST /inference/v1/abort_requests: 200 with an empty body; the abort finishes in the
// background. Needs the API key like /inference/v1/generate.

import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiBodyExample } from '../../common/api-docs.decorators';
import { AbortRequestsDto } from './dto/abort-requests.dto';
import { AbortService } from './abort.service';

export const ABORT_OPERATION = {
  summary: 'Abort in-flight generate requests',
  description: 'Aborts the given /inference/v1/generate requests; they end with finish_reason "abort". Answers 200 with an empty body at once.',
} as const;

/** Aborting an id that is not running is not an error: the example runs as it stands. */
export const ABORT_EXAMPLE = { request_ids: ['generate-tokens-42'] };

@ApiTags('tokens')
@Controller()
export class AbortController {
  constructor(private readonly aborts: AbortService) {}

  @Post('inference/v1/abort_requests')
  @HttpCode(200)
  @ApiOperation(ABORT_OPERATION)
  @ApiOkResponse({ description: 'Empty body.' })
  @ApiBodyExample(ABORT_EXAMPLE)
  abortRequests(@Body() body: AbortRequestsDto): void {
    this.aborts.abortInBackground(body.request_ids);
  }
}
