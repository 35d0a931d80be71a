// Which feature modules a server registers, by flag and by what the served model does (a
// generation model has no /v1/embeddings, an embedding model no /v1/completions, as vLLM
// registers routes by the model's supported tasks). Adding an endpoint family is one line in
// FEATURE_MODULES: `{ module: XModule, when: openAiRoutes }` (or another predicate of served-routes.ts).
// The OpenAPI script registers every entry regardless of `when` so the spec covers all routes.

import type { Type } from '@nestjs/common';
import type { ServerConfig } from '../config/server-config';
import { AudioModule } from './audio/audio.module';
import { AbortModule, LegacyAbortModule } from './abort/abort.module';
import { ChatModule } from './chat/chat.module';
import { ClassifyModule } from './classify/classify.module';
import { CompletionsModule } from './completions/completions.module';
import { DerenderModule } from './derender/derender.module';
import { DevModule } from './dev/dev.module';
import { EmbeddingsModule } from './embeddings/embeddings.module';
import { HealthModule } from './health/health.module';
import { InvocationsModule } from './invocations/invocations.module';
import { LoadModule } from './load/load.module';
import { LoraAdaptersModule } from './lora/lora-adapters.module';
import { MetricsModule } from './metrics/metrics.module';
import { ModelsModule } from './models/models.module';
import { PoolingModule } from './pooling/pooling.module';
import { RenderModule } from './render/render.module';
import { ResponsesModule } from './responses/responses.module';
import { ScoreModule } from './score/score.module';
import { TokenizeModule } from './tokenize/tokenize.module';
import { TokensGenerateModule } from './tokens-generate/tokens-generate.module';
import {
  always,
  audioRoutes,
  classifyRoutes,
  devMode,
  embeddingRoutes,
  invocationRoutes,
  openAiRoutes,
  poolingRoutes,
  runtimeLoraRoutes,
  scaleOutRoutes,
  scaleOutTextRoutes,
  scoreRoutes,
  textRoutes,
  tokensOnly,
  type RoutePredicate,
  type ServedModel,
} from './served-routes';

export { audioRoutes, GENERATION_MODEL, servedModelFor, type ServedModel } from './served-routes';

interface FeatureModuleEntry {
  module: Type<unknown>;
  /** Registered when this returns true for the server's flags and model. */
  when: RoutePredicate;
}

const FEATURE_MODULES: FeatureModuleEntry[] = [
  { module: HealthModule, when: always },
  { module: ModelsModule, when: always },
  { module: MetricsModule, when: always },
  { module: LoadModule, when: always },
  { module: CompletionsModule, when: openAiRoutes },
  { module: ChatModule, when: openAiRoutes },
  { module: AudioModule, when: audioRoutes },
  { module: ResponsesModule, when: openAiRoutes },
  { module: TokenizeModule, when: textRoutes },
  { module: InvocationsModule, when: invocationRoutes },
  { module: DevModule, when: devMode },
  { module: LoraAdaptersModule, when: runtimeLoraRoutes },
  { module: TokensGenerateModule, when: scaleOutRoutes },
  { module: AbortModule, when: scaleOutRoutes },
  { module: LegacyAbortModule, when: tokensOnly },
  { module: RenderModule, when: scaleOutTextRoutes },
  { module: DerenderModule, when: scaleOutTextRoutes },
  { module: PoolingModule, when: poolingRoutes },
  { module: EmbeddingsModule, when: embeddingRoutes },
  { module: ClassifyModule, when: classifyRoutes },
  { module: ScoreModule, when: scoreRoutes },
];

/** The modules a server with `config` serving `model` registers (all of them when `all` is set). */
export function featureModulesFor(config: ServerConfig, model: ServedModel, all = false): Type<unknown>[] {
  return FEATURE_MODULES.filter((entry) => all || entry.when(config, model)).map((entry) => entry.module);
}
