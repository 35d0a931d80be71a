// GET /load: {"server_load": N}, the generation requests in flight (0 unless
// --enable-server-load-tracking). Open like /health: load balancers poll it.

import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { Public } from '../../common/public.decorator';
import { ServerLoad } from './server-load';

export class ServerLoadResponse {
  @ApiProperty({ example: 3, description: 'Generation requests in flight (0 unless --enable-server-load-tracking)' })
  server_load!: number;
}

@ApiTags('health')
@Controller()
export class LoadController {
  constructor(private readonly load: ServerLoad) {}

  @Public()
  @Get('load')
  @ApiOperation({ summary: 'Server load', description: 'Generation requests in flight (with --enable-server-load-tracking).' })
  @ApiOkResponse({ type: ServerLoadResponse, description: 'The load.' })
  getServerLoadMetrics(): ServerLoadResponse {
    return { server_load: this.load.value };
  }
}
