// GET /version: {"version": "<package version>"}.

import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiProperty, ApiTags } from '@nestjs/swagger';
import { ORTLLM_VERSION } from '../../config/version';

export class VersionResponse {
  @ApiProperty({ example: '0.1.0' })
  version!: string;
}

@ApiTags('health')
@Controller()
export class VersionController {
  @Get('version')
  @ApiOkResponse({ type: VersionResponse })
  showVersion(): VersionResponse {
    return { version: ORTLLM_VERSION };
  }
}
