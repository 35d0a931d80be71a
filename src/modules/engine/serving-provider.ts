// Nest provider for a serving class: built from the engine client, the server flags and the
// served models (names and LoRA adapters).

import type { FactoryProvider } from '@nestjs/common';
import type { ServerConfig } from '../../config/server-config';
import type { EngineClient } from '../../engine/types';
import { ENGINE_CLIENT, SERVED_MODELS, SERVER_CONFIG } from './engine.tokens';
import type { ServedModels } from '../../serving/lora/served-models';
import { servingOptionsFrom, type ServingOptions } from '../../serving/serving-options';

/** `optionsFrom` picks the flags the class takes (default: the options every serving class shares). */
export function servingProvider<T, O = ServingOptions>(
  cls: new (engine: EngineClient, opts: O) => T,
  optionsFrom: (config: ServerConfig, models: ServedModels, engine: EngineClient) => O = servingOptionsFrom as unknown as (config: ServerConfig, models: ServedModels, engine: EngineClient) => O,
): FactoryProvider<T> {
  return {
    provide: cls,
    inject: [ENGINE_CLIENT, SERVER_CONFIG, SERVED_MODELS],
    useFactory: (engine: EngineClient, config: ServerConfig, models: ServedModels) => new cls(engine, optionsFrom(config, models, engine)),
  };
}
