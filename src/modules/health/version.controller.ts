// GET /version: {"version": "<package version>"}.

import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { ORTLLM_VERSION } from '../../config/version';

export class VersionResponse {
  @ApiProperty({ example: '0.1.0', description: 'The ortllm version.' })
  version!: string;
}

@ApiTags('health')
@Controller()
export class VersionController {
  @Get('version')
  @ApiOperation({ summary: 'Server version' })
  @ApiOkResponse({ type: VersionResponse, description: 'The version.' })
  showVersion(): VersionResponse {
    return { version: ORTLLM_VERSION };
  }
}
