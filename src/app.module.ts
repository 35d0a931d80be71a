// The root module: the engine (global) plus the feature modules the flags ask for.

import { DynamicModule, Module } from '@nestjs/common';
import type { ServerConfig } from './config/server-config';
import type { EngineClient } from './engine/types';
import { EngineModule } from './modules/engine/engine.module';
import { featureModulesFor, GENERATION_MODEL, type ServedModel } from './modules/feature-modules';

export interface AppModuleOptions {
  /** An already-built engine instead of createEngine(config). */
  engine?: EngineClient;
  /** Register every feature module whatever the flags (OpenAPI generation). */
  allFeatures?: boolean;
  /** What the model does, which decides its routes (createApp reads it from the model's metadata). */
  servedModel?: ServedModel;
}

@Module({})
export class AppModule {
  static forRoot(config: ServerConfig, options: AppModuleOptions = {}): DynamicModule {
    const servedModel = options.servedModel ?? GENERATION_MODEL;
    return {
      module: AppModule,
      imports: [EngineModule.forRoot(config, options.engine, servedModel), ...featureModulesFor(config, servedModel, options.allFeatures)],
    };
  }
}
