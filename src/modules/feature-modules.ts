// Which feature modules a server registers, by flag and by what the served model does (a
// generation model has no /v1/embeddings, an embedding model no /v1/completions, as vLLM
// registers routes by the model's supported tasks). Adding an endpoint family is one line in
// FEATURE_MODULES: `{ module: XModule, when: openAiRoutes }` (or another predicate below).
// The OpenAPI script registers every entry regardless of `when` so the spec covers all routes.

import type { Type } from '@nestjs/common';
import type { ServerConfig } from '../config/server-config';
import type { ModelOutput, PoolerSettings } from '../model/types';
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
import { MetricsModule } from './metrics/metrics.module';
import { ModelsModule } from './models/models.module';
import { PoolingModule } from './pooling/pooling.module';
import { RenderModule } from './render/render.module';
import { ResponsesModule } from './responses/responses.module';
import { ScoreModule } from './score/score.module';
import { TokenizeModule } from './tokenize/tokenize.module';
import { TokensGenerateModule } from './tokens-generate/tokens-generate.module';

/** What the served model does, as far as routes are concerned. */
export interface ServedModel {
  /** The runner generates text. */
  generates: boolean;
  /** The runner transcribes audio (encoder-decoder speech models). */
  transcribes: boolean;
  /** How pooled outputs are served; null for generation models. */
  pooler: PoolerSettings | null;
}

export const GENERATION_MODEL: ServedModel = { generates: true, transcribes: false, pooler: null };

/** The routes' view of a runner output and its pooler. */
export function servedModelFor(output: ModelOutput, pooler: PoolerSettings | null): ServedModel {
  return { generates: output.kind === 'logits', transcribes: output.kind === 'transcription', pooler };
}

interface FeatureModuleEntry {
  module: Type<unknown>;
  /** Registered when this returns true for the server's flags and model. */
  when: (config: ServerConfig, model: ServedModel) => boolean;
}

/** Always on (health, ping, version, models, metrics). */
const always = (): boolean => true;
/** Tokenize / detokenize: off with --tokens-only. */
const textRoutes = (c: ServerConfig): boolean => !c.tokensOnly;
/** The OpenAI generation routes (completions, chat, responses): generation models, not with --tokens-only. */
const openAiRoutes = (c: ServerConfig, m: ServedModel): boolean => !c.tokensOnly && m.generates;
/** Scale-out routes (generate, abort, render, derender): --enable-scale-out or --tokens-only, generation models. */
const scaleOutRoutes = (c: ServerConfig, m: ServedModel): boolean => (c.enableScaleOut || c.tokensOnly) && m.generates;
/** Legacy routes registered only with --tokens-only (POST /abort_requests). */
const tokensOnly = (c: ServerConfig, m: ServedModel): boolean => c.tokensOnly && m.generates;
/** Speech-to-text (transcriptions, translations): speech models, not with --tokens-only. */
export const audioRoutes = (c: ServerConfig, m: ServedModel): boolean => !c.tokensOnly && m.transcribes;
/** VLLM_SERVER_DEV_MODE=1: sleep, wake_up, reset_prefix_cache, server_info, collective_rpc. */
const devMode = (c: ServerConfig): boolean => c.devMode;
/** Scale-out routes that need a tokenizer (render, derender): absent with --tokens-only / --skip-tokenizer-init. */
const scaleOutTextRoutes = (c: ServerConfig, m: ServedModel): boolean => scaleOutRoutes(c, m) && !c.skipTokenizerInit;
/** /pooling: every pooling model. */
const poolingRoutes = (_c: ServerConfig, m: ServedModel): boolean => m.pooler !== null;
/** /v1/embeddings: embedding models. */
const embeddingRoutes = (_c: ServerConfig, m: ServedModel): boolean => m.pooler?.task === 'embed';
/** /classify: classification models. */
const classifyRoutes = (_c: ServerConfig, m: ServedModel): boolean => m.pooler?.task === 'classify';
/** /score and /rerank: embedding models (cosine) and single-label classifiers (cross-encoders), as vLLM's enable_scoring_api. */
const scoreRoutes = (c: ServerConfig, m: ServedModel): boolean =>
  embeddingRoutes(c, m) || (classifyRoutes(c, m) && m.pooler!.labels.length === 1);

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
  { module: InvocationsModule, when: openAiRoutes },
  { module: DevModule, when: devMode },
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
