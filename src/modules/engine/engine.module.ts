// EngineModule (global): provides SERVER_CONFIG, EngineService and the ENGINE_CLIENT token
// (an alias of EngineService). The engine is created once, before the app starts listening.
// Pass `engine` to serve an already-built client (in-process tests); it is shut down with the app.

import { DynamicModule, Global, Module } from '@nestjs/common';
import { createEngine } from '../../engine';
import type { EngineClient } from '../../engine/types';
import { ServerConfig, toEngineOptions } from '../../config/server-config';
import { EngineService } from './engine.service';
import { ENGINE_CLIENT, SERVER_CONFIG } from './engine.tokens';

@Global()
@Module({})
export class EngineModule {
  static forRoot(config: ServerConfig, engine?: EngineClient): DynamicModule {
    return {
      module: EngineModule,
      providers: [
        { provide: SERVER_CONFIG, useValue: config },
        {
          provide: EngineService,
          useFactory: async () => new EngineService(engine ?? (await createEngine(toEngineOptions(config)))),
        },
        { provide: ENGINE_CLIENT, useExisting: EngineService },
      ],
      exports: [SERVER_CONFIG, EngineService, ENGINE_CLIENT],
    };
  }
}
