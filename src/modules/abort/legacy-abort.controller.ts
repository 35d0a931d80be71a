// The legacy POST /abort_requests that --tokens-only deployments already call: the same handler
// as /inference/v1/abort_requests, but open without the API key (as vLLM registers it).

import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../../common/public.decorator';
import { ApiBodyExample } from '../../common/api-docs.decorators';
import { ABORT_EXAMPLE, ABORT_OPERATION } from './abort.controller';
import { AbortService } from './abort.service';
import { AbortRequestsDto } from './dto/abort-requests.dto';

@ApiTags('tokens')
@Controller()
export class LegacyAbortController {
  constructor(private readonly aborts: AbortService) {}

  @Post('abort_requests')
  @Public()
  @HttpCode(200)
  @ApiOperation({ ...ABORT_OPERATION, summary: `${ABORT_OPERATION.summary} (legacy path, --tokens-only, no API key)` })
  @ApiOkResponse({ description: 'Empty body.' })
  @ApiBodyExample(ABORT_EXAMPLE)
  abortRequestsLegacy(@Body() body: AbortRequestsDto): void {
    this.aborts.abortInBackground(body.request_ids);
  }
}
