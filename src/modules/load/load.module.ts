import { Module } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import type { ServerConfig } from '../../config/server-config';
import { SERVER_CONFIG } from '../engine/engine.tokens';
import { LoadController } from './load.controller';
import { ServerLoad } from './server-load';

/** GET /load; with --enable-server-load-tracking the counting hooks are installed while the app is built. */
@Module({
  controllers: [LoadController],
  providers: [
    {
      provide: ServerLoad,
      inject: [SERVER_CONFIG, HttpAdapterHost],
      useFactory: (config: ServerConfig, host: HttpAdapterHost) => {
        const load = new ServerLoad();
        if (config.enableServerLoadTracking) load.install(host.httpAdapter.getInstance<FastifyInstance>());
        return load;
      },
    },
  ],
})
export class LoadModule {}
