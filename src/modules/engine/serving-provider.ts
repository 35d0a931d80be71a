// Nest provider for a serving class: built from the engine client and the server flags.

import type { FactoryProvider } from '@nestjs/common';
import type { ServerConfig } from '../../config/server-config';
import type { EngineClient } from '../../engine/types';
import { ENGINE_CLIENT, SERVER_CONFIG } from './engine.tokens';
import { servingOptionsFrom, type ServingOptions } from '../../serving/serving-options';

/** `optionsFrom` picks the flags the class takes (default: the options every serving class shares). */
export function servingProvider<T, O = ServingOptions>(
  cls: new (engine: EngineClient, opts: O) => T,
  optionsFrom: (config: ServerConfig) => O = servingOptionsFrom as (config: ServerConfig) => O,
): FactoryProvider<T> {
  return {
    provide: cls,
    inject: [ENGINE_CLIENT, SERVER_CONFIG],
    useFactory: (engine: EngineClient, config: ServerConfig) => new cls(engine, optionsFrom(config)),
  };
}
