// What the served model does, as far as routes are concerned, and the predicates that decide
// which routes a server registers (feature-modules.ts) and which request types /invocations routes
// to (invocations/invocation-routes.ts): both follow vLLM's supported tasks.

import type { ServerConfig } from '../config/server-config';
import type { ModelOutput, PoolerSettings } from '../model/types';

/** A predicate over the server's flags and the served model. */
export type RoutePredicate = (config: ServerConfig, model: ServedModel) => boolean;

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

/** Always on (health, ping, version, models, metrics). */
export const always = (): boolean => true;
/** Tokenize / detokenize: off with --tokens-only. */
export const textRoutes = (c: ServerConfig): boolean => !c.tokensOnly;
/** The OpenAI generation routes (completions, chat, responses): generation models, not with --tokens-only. */
export const openAiRoutes = (c: ServerConfig, m: ServedModel): boolean => !c.tokensOnly && m.generates;
/** Scale-out routes (generate, abort, render, derender): --enable-scale-out or --tokens-only, generation models. */
export const scaleOutRoutes = (c: ServerConfig, m: ServedModel): boolean => (c.enableScaleOut || c.tokensOnly) && m.generates;
/** Legacy routes registered only with --tokens-only (POST /abort_requests). */
export const tokensOnly = (c: ServerConfig, m: ServedModel): boolean => c.tokensOnly && m.generates;
/** Speech-to-text (transcriptions, translations): speech models, not with --tokens-only. */
export const audioRoutes = (c: ServerConfig, m: ServedModel): boolean => !c.tokensOnly && m.transcribes;
/** VLLM_SERVER_DEV_MODE=1: sleep, wake_up, reset_prefix_cache, kv_cache/blocks, server_info, collective_rpc. */
export const devMode = (c: ServerConfig): boolean => c.devMode;
/** VLLM_ALLOW_RUNTIME_LORA_UPDATING: /v1/load_lora_adapter, /v1/unload_lora_adapter (as vLLM, whatever the model). */
export const runtimeLoraRoutes = (c: ServerConfig): boolean => c.allowRuntimeLoraUpdating;
/** Scale-out routes that need a tokenizer (render, derender): absent with --tokens-only / --skip-tokenizer-init. */
export const scaleOutTextRoutes = (c: ServerConfig, m: ServedModel): boolean => scaleOutRoutes(c, m) && !c.skipTokenizerInit;
/** /pooling: every pooling model. */
export const poolingRoutes = (_c: ServerConfig, m: ServedModel): boolean => m.pooler !== null;
/** /v1/embeddings: embedding models. */
export const embeddingRoutes = (_c: ServerConfig, m: ServedModel): boolean => m.pooler?.task === 'embed';
/** /classify: classification models. */
export const classifyRoutes = (_c: ServerConfig, m: ServedModel): boolean => m.pooler?.task === 'classify';
/** /score and /rerank: embedding models (cosine) and single-label classifiers (cross-encoders), as vLLM's enable_scoring_api. */
export const scoreRoutes = (c: ServerConfig, m: ServedModel): boolean =>
  embeddingRoutes(c, m) || (classifyRoutes(c, m) && m.pooler!.labels.length === 1);
/** /invocations (SageMaker): whenever one of the endpoints it routes to is registered. */
export const invocationRoutes = (c: ServerConfig, m: ServedModel): boolean => openAiRoutes(c, m) || poolingRoutes(c, m);
