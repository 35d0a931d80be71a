// Which feature modules a server registers, by flag. Adding an endpoint family is one line in
// FEATURE_MODULES: `{ module: XModule, when: openAiRoutes }` (or scaleOutRoutes, tokensOnly, always).
// The OpenAPI script registers every entry regardless of `when` so the spec covers all routes.

import type { Type } from '@nestjs/common';
import type { ServerConfig } from '../config/server-config';
import { AbortModule, LegacyAbortModule } from './abort/abort.module';
import { ChatModule } from './chat/chat.module';
import { CompletionsModule } from './completions/completions.module';
import { DerenderModule } from './derender/derender.module';
import { DevModule } from './dev/dev.module';
import { HealthModule } from './health/health.module';
import { InvocationsModule } from './invocations/invocations.module';
import { LoadModule } from './load/load.module';
import { MetricsModule } from './metrics/metrics.module';
import { ModelsModule } from './models/models.module';
import { RenderModule } from './render/render.module';
import { TokenizeModule } from './tokenize/tokenize.module';
import { TokensGenerateModule } from './tokens-generate/tokens-generate.module';

interface FeatureModuleEntry {
  module: Type<unknown>;
  /** Registered when this returns true for the server's flags. */
  when: (config: ServerConfig) => boolean;
}

/** Always on (health, ping, version, models, metrics). */
const always = (): boolean => true;
/** The OpenAI routes (completions, chat, tokenize): off with --tokens-only. */
const openAiRoutes = (c: ServerConfig): boolean => !c.tokensOnly;
/** Scale-out routes (generate, abort, render, derender): --enable-scale-out or --tokens-only. */
const scaleOutRoutes = (c: ServerConfig): boolean => c.enableScaleOut || c.tokensOnly;
/** Legacy routes registered only with --tokens-only (POST /abort_requests). */
const tokensOnly = (c: ServerConfig): boolean => c.tokensOnly;
/** VLLM_SERVER_DEV_MODE=1: sleep, wake_up, reset_prefix_cache, server_info, collective_rpc. */
const devMode = (c: ServerConfig): boolean => c.devMode;
/** Scale-out routes that need a tokenizer (render, derender): absent with --tokens-only / --skip-tokenizer-init. */
const scaleOutTextRoutes = (c: ServerConfig): boolean => scaleOutRoutes(c) && !c.skipTokenizerInit;

const FEATURE_MODULES: FeatureModuleEntry[] = [
  { module: HealthModule, when: always },
  { module: ModelsModule, when: always },
  { module: MetricsModule, when: always },
  { module: LoadModule, when: always },
  { module: CompletionsModule, when: openAiRoutes },
  { module: ChatModule, when: openAiRoutes },
  { module: TokenizeModule, when: openAiRoutes },
  { module: InvocationsModule, when: openAiRoutes },
  { module: DevModule, when: devMode },
  { module: TokensGenerateModule, when: scaleOutRoutes },
  { module: AbortModule, when: scaleOutRoutes },
  { module: LegacyAbortModule, when: tokensOnly },
  { module: RenderModule, when: scaleOutTextRoutes },
  { module: DerenderModule, when: scaleOutTextRoutes },
];

/** The modules a server with `config` registers (all of them when `all` is set). */
export function featureModulesFor(config: ServerConfig, all = false): Type<unknown>[] {
  return FEATURE_MODULES.filter((entry) => all || entry.when(config)).map((entry) => entry.module);
}
