// ServerConfig: the resolved value of every `ortllm serve` flag. Its type, defaults, validation
// and environment come from the declarations in flags.ts; this file fills and checks a config
// (tests and scripts call resolveServerConfig() with a partial object) and holds the rules that
// span several flags, as vLLM's EngineArgs.__post_init__ does.

import { existsSync, statSync } from 'node:fs';
import type { ConvertFlag } from '../model/types';
import type { FlagValue } from './flag-declaration';
import type { TaskFlag } from './flag-values';
import { FLAGS } from './flags';
import { fromVllmEnv } from './vllm-env';

// The flag value types and constants, for the code that imports them with ServerConfig.
export * from './flag-values';

type Flags = typeof FLAGS;
export type FlagKey = keyof Flags;
export type ServerConfig = { -readonly [K in FlagKey]: FlagValue<Flags[K]> };

/** A flag value that cannot be served; the CLI prints it and exits with code 2. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new ConfigError(message);
}

const FLAG_KEYS = Object.keys(FLAGS) as FlagKey[];

/** Each flag's default, given the device and model (the defaults that depend on them). */
function defaultsFor(given: Partial<ServerConfig>): ServerConfig {
  const context = { device: given.device ?? FLAGS.device.default, model: given.model ?? FLAGS.model.default };
  const config: Record<string, unknown> = {};
  for (const key of FLAG_KEYS) {
    const value: unknown = FLAGS[key].default;
    config[key] = typeof value === 'function' ? (value as (c: typeof context) => unknown)(context) : value;
  }
  return config as ServerConfig;
}

/**
 * Fills defaults, applies VLLM_* variables and the --tokens-only implications, validates.
 * `input` uses ServerConfig's keys; undefined means "not given".
 */
export function resolveServerConfig(input: Partial<ServerConfig>, env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const flags = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as Partial<ServerConfig>;
  // VLLM_* environment variables fill what the flags left unset (flags win, as in vLLM).
  let fromEnv: Partial<ServerConfig>;
  try {
    fromEnv = fromVllmEnv(env, flags);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const given: Partial<ServerConfig> = { ...fromEnv, ...flags };
  // An empty --served-model-name list means the default (the model path).
  if (given.servedModelNames?.length === 0) delete given.servedModelNames;
  const config: ServerConfig = { ...defaultsFor(given), ...given };
  // vLLM: concurrent partial prefills without a threshold treat prompts over 4% of the context as long.
  if (config.maxNumPartialPrefills > 1 && config.longPrefillTokenThreshold === 0 && config.maxModelLen !== null) {
    config.longPrefillTokenThreshold = Math.floor(config.maxModelLen * 0.04);
  }
  // --tokens-only forces the tokenizer off and the scale-out routes on (as in vLLM).
  if (config.tokensOnly) {
    config.skipTokenizerInit = true;
    config.enableScaleOut = true;
  }
  config.rootPath = normalizeRootPath(config.rootPath);
  config.structuredOutputsConfig = {
    ...config.structuredOutputsConfig,
    disableAnyWhitespace: config.structuredOutputsConfig.disableAnyWhitespace || config.guidedDecodingDisableAnyWhitespace,
    disableAdditionalProperties: config.structuredOutputsConfig.disableAdditionalProperties || config.guidedDecodingDisableAdditionalProperties,
  };
  applyDeprecatedTask(config, given);
  validate(config);
  return config;
}

/**
 * vLLM's mapping of the deprecated --task: generate -> --runner generate; a pooling task ->
 * --runner pooling with the matching --convert ('score' keeps the architecture's own pooling
 * task). It may not be combined with --runner / --convert.
 */
function applyDeprecatedTask(config: ServerConfig, given: Partial<ServerConfig>): void {
  const task = config.task;
  if (task === null || task === 'auto') return;
  check(given.runner === undefined && given.convert === undefined, '--task is deprecated and cannot be combined with --runner or --convert; use those instead');
  const convert: Record<Exclude<TaskFlag, 'auto' | 'generate'>, ConvertFlag> = { embedding: 'embed', embed: 'embed', classify: 'classify', score: 'auto', reward: 'reward' };
  config.runner = task === 'generate' ? 'generate' : 'pooling';
  config.convert = task === 'generate' ? 'auto' : convert[task];
  const replacement = task === 'generate' ? '--runner generate' : `--runner pooling${config.convert === 'auto' ? '' : ` --convert ${config.convert}`}`;
  process.emitWarning(`--task is deprecated (as in vLLM); use ${replacement} instead.`, 'DeprecationWarning');
}

function normalizeRootPath(rootPath: string): string {
  const trimmed = rootPath.trim().replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** Each flag's own check (flags.ts), then the rules between flags. */
function validate(c: ServerConfig): void {
  for (const key of FLAG_KEYS) {
    const { valid, invalid } = FLAGS[key] as { valid?: (v: unknown) => boolean; invalid?: string | ((v: unknown) => string) };
    if (!valid || valid(c[key])) continue;
    throw new ConfigError(typeof invalid === 'function' ? invalid(c[key]) : (invalid ?? `${key} is not valid`));
  }
  check((c.sslKeyfile === null) === (c.sslCertfile === null), '--ssl-keyfile and --ssl-certfile must be given together');
  check(!c.enableAutoToolChoice || c.toolCallParser !== null, '--enable-auto-tool-choice requires --tool-call-parser');
  check(c.maxLongPartialPrefills <= c.maxNumPartialPrefills, '--max-long-partial-prefills must be <= --max-num-partial-prefills');
  check(c.maxModelLen === null || c.longPrefillTokenThreshold <= c.maxModelLen, '--long-prefill-token-threshold cannot be greater than --max-model-len');
  // vLLM's messages: the worker's when an adapter is loaded without LoRA, LoRAConfig's for the store size.
  check(c.enableLora || c.loraModules.length === 0, 'LoRA is not enabled. Use --enable-lora to enable LoRA.');
  check(c.maxCpuLoras === null || c.maxCpuLoras >= c.maxLoras, `max_cpu_loras (${c.maxCpuLoras}) must be >= max_loras (${c.maxLoras})`);
  const resolverDir = loraResolverCacheDirOf(c);
  check(
    resolverDir === null || (existsSync(resolverDir) && statSync(resolverDir).isDirectory()),
    'VLLM_LORA_RESOLVER_CACHE_DIR must be set to a valid directory for Filesystem Resolver plugin to function',
  );
}

/** vLLM's filesystem LoRA resolver directory: VLLM_LORA_RESOLVER_CACHE_DIR, when VLLM_PLUGINS is unset or lists lora_filesystem_resolver. */
export function loraResolverCacheDirOf(c: Pick<ServerConfig, 'loraResolverCacheDir' | 'vllmPlugins'>): string | null {
  if (c.loraResolverCacheDir === null) return null;
  return c.vllmPlugins === null || c.vllmPlugins.includes('lora_filesystem_resolver') ? c.loraResolverCacheDir : null;
}

/** The model name reported in responses and the metrics `model_name` label. */
export function reportedModelName(c: ServerConfig): string {
  return c.servedModelNames[0];
}
