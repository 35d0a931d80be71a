// What the serving layer needs from the server flags, and the checks shared by every
// generation endpoint (model name, request-level vLLM extras).

import { OpenAIHttpError } from './openai-error';
import type { ServerConfig } from '../config/server-config';
import { RequestValidationError } from '../engine/errors';
import { outputParserFactories, type OutputParserFactories } from './chat-output';
import type { ToolServingOptions } from './tool-choice';
import { ServedModels, type ResolvedModel } from './lora/served-models';
import { mediaOptionsFrom, TEXT_ONLY, VISION_MODALITIES, type MediaOptions } from './media/media-options';
import type { EngineClient } from '../engine/types';

export interface ServingOptions extends ToolServingOptions {
  /** --served-model-name: the first is reported in responses; any is accepted. */
  servedModelNames: string[];
  returnTokensAsTokenIds: boolean;
  enablePromptTokensDetails: boolean;
  enableForceIncludeUsage: boolean;
  responseRole: string;
  trustRequestChatTemplate: boolean;
  maxLogprobs: number;
  /** --chat-template-content-format (absent: 'auto'). */
  chatTemplateContentFormat?: 'auto' | 'string' | 'openai';
  /** The parser classes --tool-call-parser / --reasoning-parser name (absent: none). */
  parsers?: OutputParserFactories;
  schedulingPolicy: ServerConfig['schedulingPolicy'];
  /** --default-chat-template-kwargs: merged under each request's chat_template_kwargs. */
  defaultChatTemplateKwargs?: Record<string, unknown> | null;
  /** The server's model names and loaded LoRA adapters (absent: the served names only). */
  models?: ServedModels;
  /** Image inputs: sources, limits and what the model takes (absent: image parts are refused). */
  media?: MediaOptions;
}

/** `engine`: the served model's image side decides which modalities image parts may use. */
export function servingOptionsFrom(config: ServerConfig, models?: ServedModels, engine?: Pick<EngineClient, 'vision'>): ServingOptions {
  return {
    models,
    servedModelNames: config.servedModelNames,
    returnTokensAsTokenIds: config.returnTokensAsTokenIds,
    enablePromptTokensDetails: config.enablePromptTokensDetails,
    enableForceIncludeUsage: config.enableForceIncludeUsage,
    responseRole: config.responseRole,
    trustRequestChatTemplate: config.trustRequestChatTemplate,
    maxLogprobs: config.maxLogprobs,
    chatTemplateContentFormat: config.chatTemplateContentFormat,
    enableAutoToolChoice: config.enableAutoToolChoice,
    toolCallParser: config.toolCallParser,
    excludeToolsWhenToolChoiceNone: config.excludeToolsWhenToolChoiceNone,
    maxTools: config.structuredOutputsLimits.maxTools,
    parsers: outputParserFactories(config),
    schedulingPolicy: config.schedulingPolicy,
    defaultChatTemplateKwargs: config.defaultChatTemplateKwargs,
    media: mediaOptionsFrom(config, engine?.vision ? VISION_MODALITIES : TEXT_ONLY),
  };
}

/** The chat template's extra variables: the server's defaults, overridden by the request's (vLLM). */
export function chatTemplateKwargs(opts: Pick<ServingOptions, 'defaultChatTemplateKwargs'>, requested: Record<string, unknown> | null | undefined): Record<string, unknown> | null {
  if (!opts.defaultChatTemplateKwargs) return requested ?? null;
  return { ...opts.defaultChatTemplateKwargs, ...(requested ?? {}) };
}

/** What the request's `model` names: a served name or a loaded adapter (vLLM's 404 otherwise). */
export function resolveModel(requested: string | null | undefined, opts: Pick<ServingOptions, 'servedModelNames' | 'models'>): ResolvedModel {
  return (opts.models ?? ServedModels.baseOnly(opts.servedModelNames)).resolve(requested);
}

/** resolveModel after loading the adapter `model` names on first use, where a LoRA resolver has it (vLLM's _check_model). */
export async function resolveModelOnFirstUse(requested: string | null | undefined, opts: Pick<ServingOptions, 'servedModelNames' | 'models'>): Promise<ResolvedModel> {
  await opts.models?.loadOnFirstUse(requested);
  return resolveModel(requested, opts);
}

/** The model name responses carry (an adapter's name when `model` names one). */
export function resolveModelName(requested: string | null | undefined, opts: Pick<ServingOptions, 'servedModelNames' | 'models'>): string {
  return resolveModel(requested, opts).name;
}

/** For the routes that run no adapter (pooling, speech to text): an adapter's name is refused with 400. */
export function resolveBaseModelName(requested: string | null | undefined, opts: Pick<ServingOptions, 'servedModelNames' | 'models'>, api: string): string {
  const resolved = resolveModel(requested, opts);
  if (resolved.lora) throw OpenAIHttpError.badRequest(`The model \`${resolved.name}\` is a LoRA adapter; the ${api} runs the base model only here.`, 'model');
  return resolved.name;
}

/** Request-level vLLM extras every generation request accepts. */
export interface RequestExtras {
  priority?: number | null;
  cache_salt?: string | null;
  kv_transfer_params?: Record<string, unknown> | null;
  vllm_xargs?: Record<string, unknown> | null;
  request_id?: string | null;
}

/** vLLM's rule for `priority` (an integer, as the DTO checked): non-zero needs --scheduling-policy priority. */
export function checkPriority(priority: number | null | undefined, policy: ServingOptions['schedulingPolicy'], param = 'priority'): number {
  const value = priority ?? 0;
  if (value !== 0 && policy !== 'priority') {
    throw new RequestValidationError(`Got priority ${value} but Priority scheduling is not enabled.`, param);
  }
  return value;
}

/** The request-level extras (vLLM checks vllm_xargs values are str/int/float, or lists of them for chat). */
export function checkRequestExtras(extras: RequestExtras, opts: Pick<ServingOptions, 'schedulingPolicy'>, allowListXargs: boolean): void {
  if (extras.cache_salt != null && (typeof extras.cache_salt !== 'string' || extras.cache_salt.length === 0)) {
    throw new RequestValidationError('Parameter `cache_salt` must be a non-empty string if provided.', 'cache_salt');
  }
  checkPriority(extras.priority, opts.schedulingPolicy);
  if (extras.vllm_xargs != null) {
    const scalar = (v: unknown) => typeof v === 'string' || typeof v === 'number';
    for (const [key, value] of Object.entries(extras.vllm_xargs)) {
      const ok = scalar(value) || (allowListXargs && Array.isArray(value) && value.every(scalar));
      if (!ok) {
        throw new RequestValidationError(
          `vllm_xargs values must be strings or numbers${allowListXargs ? ' (or lists of them)' : ''}; '${key}' is not.`,
          'vllm_xargs',
        );
      }
    }
  }
}
