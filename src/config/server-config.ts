// ServerConfig: every `ortllm serve` flag, its vLLM name, default and validation, in one place.
// The CLI builds its options from SERVER_FLAGS; tests and scripts call resolveServerConfig()
// with a partial object. toEngineOptions() maps the result onto the engine's contract.

import { availableParallelism } from 'node:os';
import type { EngineOptions } from '../engine/types';
import type { KvCacheDtypeFlag } from '../model/runner/kv-dtype';
import type { ConvertFlag, LoadModelOptions, PoolerConfigFlag, RunnerFlag } from '../model/types';
import { DEFAULT_STRUCTURED_OUTPUTS_CONFIG, type StructuredOutputsConfig } from './structured-outputs-config';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS, type StructuredOutputsLimits } from '../engine/structured/grammar-limits';
import { fromVllmEnv } from './vllm-env';
import { isTrustedProxyEntry } from './trusted-proxies';

export type LogLevel = 'critical' | 'error' | 'warning' | 'info' | 'debug' | 'trace';
export const LOG_LEVELS: readonly LogLevel[] = ['critical', 'error', 'warning', 'info', 'debug', 'trace'];
/** What happens to request fields an endpoint does not declare: logged (warning or debug level) and ignored, or refused. */
export type UnknownFieldsAction = 'warn' | 'reject' | 'ignore';
export const UNKNOWN_FIELDS_ACTIONS: readonly UnknownFieldsAction[] = ['warn', 'reject', 'ignore'];
/** --dtype after aliases (half -> float16, float -> float32); see model/graph/compute-dtype.ts. */
export type ModelDtype = 'auto' | 'float32' | 'float16' | 'bfloat16';
/** --kv-cache-dtype; what each value stores is model/runner/kv-dtype.ts's table. */
export type { KvCacheDtypeFlag };
export type TokenizerMode = 'auto' | 'hf' | 'slow';

export interface ServerConfig {
  /** GGUF file or Hugging Face directory; null = the built-in dummy model. */
  model: string | null;
  /** null = all interfaces. */
  host: string | null;
  /** 0 = pick a free port. */
  port: number;
  /** --api-key (repeatable) or VLLM_API_KEY; empty = no auth. */
  apiKeys: string[];
  /** First is reported in responses and metrics; any is accepted in requests. */
  servedModelNames: string[];
  maxModelLen: number | null;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  schedulingPolicy: 'fcfs' | 'priority';
  generationConfig: string;
  chatTemplate: string | null;
  trustRequestChatTemplate: boolean;
  responseRole: string;
  /** How message content reaches the template: 'auto' detects it from the template. */
  chatTemplateContentFormat: 'auto' | 'string' | 'openai';
  /** Parse tool calls out of the text for tool_choice "auto" (needs toolCallParser). */
  enableAutoToolChoice: boolean;
  /** Registered name of the tool-call parser (hermes, llama3_json, mistral, pythonic, qwen3_coder, or a plugin's). */
  toolCallParser: string | null;
  /** A JS/TS file registering more tool-call parsers. */
  toolParserPlugin: string | null;
  /** Registered name of the reasoning parser (deepseek_r1, qwen3, or a plugin's). */
  reasoningParser: string | null;
  /** A JS/TS file registering more reasoning parsers. */
  reasoningParserPlugin: string | null;
  /** tool_choice "none" keeps `tools` out of the prompt. */
  excludeToolsWhenToolChoiceNone: boolean;
  tokensOnly: boolean;
  enableScaleOut: boolean;
  skipTokenizerInit: boolean;
  returnTokensAsTokenIds: boolean;
  enableRequestIdHeaders: boolean;
  enablePromptTokensDetails: boolean;
  enableForceIncludeUsage: boolean;
  maxLogprobs: number;
  allowedOrigins: string[];
  allowedMethods: string[];
  allowedHeaders: string[];
  allowCredentials: boolean;
  /** Path prefix when served behind a path-rewriting proxy ('' = none). */
  rootPath: string;
  /** --forwarded-allow-ips: peers trusted to set X-Forwarded-Proto / X-Forwarded-Host ('*' = any). */
  forwardedAllowIps: string[];
  sslKeyfile: string | null;
  sslCertfile: string | null;
  sslCaCerts: string | null;
  logLevel: LogLevel;
  disableUvicornAccessLog: boolean;
  enableLogRequests: boolean;
  loadFormat: 'auto' | 'dummy';
  device: 'cpu' | 'cuda';
  /** Threads of the forward pass (intra-op and attention); null = the engine's default (VLLM_CPU_OMP_THREADS_BIND). */
  cpuThreads: number | null;
  /** KV cache budget in bytes; null = the engine's default share of memory. */
  kvCacheMemoryBytes: number | null;
  blockSize: number;
  enablePrefixCaching: boolean;
  disableFastapiDocs: boolean;
  /** ortllm: largest accepted request body in bytes (bigger -> 413). */
  maxRequestBodyBytes: number;
  /** ortllm: seconds in-flight requests get to finish after SIGTERM/SIGINT. */
  shutdownTimeoutSeconds: number;
  /** ortllm: request-body shape limits, checked as the body arrives (400 past them). */
  maxJsonDepth: number;
  maxJsonObjectKeys: number;
  maxJsonArrayLength: number;
  maxJsonStringLength: number;
  /** ortllm: seconds a client gets to send a whole request (408 after); 0 = no limit. */
  bodyReadTimeoutSeconds: number;
  /** Most sequences (waiting + running; n counts n) the engine holds; more get 503. null = no limit. */
  maxNumQueuedReqs: number | null;
  /** ortllm: seconds a streaming client may read nothing before its request is aborted; 0 = never. */
  streamStallTimeoutSeconds: number;
  /** Tokenizer/chat-template worker threads for large inputs; 0 = all on the HTTP thread. */
  tokenizerPoolSize: number;
  /** Largest audio upload in MiB (vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB). */
  maxAudioClipFilesizeMb: number;
  /** Longest recording /v1/audio/* accept, in seconds (bounds each request's decoded memory). */
  maxAudioDurationSeconds: number;
  /** --structured-outputs-config (with the deprecated --guided-decoding-disable-* switches folded in). */
  structuredOutputsConfig: StructuredOutputsConfig;
  /** --structured-outputs-limits: bounds on a constraint and its compile budget. */
  structuredOutputsLimits: StructuredOutputsLimits;
  guidedDecodingDisableAnyWhitespace: boolean;
  guidedDecodingDisableAdditionalProperties: boolean;
  /** ortllm: request fields an endpoint does not declare are logged as a warning (vLLM), refused with 400, or logged at debug level. */
  unknownRequestFields: UnknownFieldsAction;
  dtype: ModelDtype;
  /** Seed of the process-wide sampler (requests without a `seed`). */
  seed: number;
  /** Fraction of memory (device memory with cuda, RAM on cpu) the KV budget is derived from; null = not given. */
  gpuMemoryUtilization: number | null;
  kvCacheDtype: KvCacheDtypeFlag;
  numGpuBlocksOverride: number | null;
  /** Tokenizer (and its chat template) from another HF directory or GGUF file; null = the model's. */
  tokenizer: string | null;
  tokenizerMode: TokenizerMode;
  maxNumPartialPrefills: number;
  maxLongPartialPrefills: number;
  /** 0 = no limit (vLLM derives 4% of max_model_len when max_num_partial_prefills > 1). */
  longPrefillTokenThreshold: number;
  /** No periodic throughput log line. */
  disableLogStats: boolean;
  /** Seconds between throughput log lines (VLLM_LOG_STATS_INTERVAL). */
  logStatsIntervalSeconds: number;
  /** GET /load counts in-flight generation requests. */
  enableServerLoadTracking: boolean;
  /** POST /sleep may free the engine's memory (with VLLM_SERVER_DEV_MODE=1). */
  enableSleepMode: boolean;
  /** VLLM_SERVER_DEV_MODE=1: /reset_prefix_cache, /server_info, /sleep, /wake_up, /is_sleeping, /collective_rpc. */
  devMode: boolean;
  /** Longest request body logged with --enable-log-requests (characters); null = all. */
  maxLogLen: number | null;
  /** config.json keys over the model's config (rope_theta, rope_scaling, max_position_embeddings). */
  hfOverrides: Record<string, unknown> | null;
  /** vLLM's older spellings of hf_overrides' rope keys (hfOverrides wins). */
  ropeTheta: number | null;
  ropeScaling: Record<string, unknown> | null;
  /** Chat template variables every request gets unless its chat_template_kwargs sets them. */
  defaultChatTemplateKwargs: Record<string, unknown> | null;
  /** Generation defaults that override (or add to) generation_config.json. */
  overrideGenerationConfig: Record<string, unknown> | null;
  /** Unix domain socket to listen on instead of host:port. */
  uds: string | null;
  /** Paths left out of the access log. */
  disableAccessLogForEndpoints: string[];
  /** Python ssl.CERT_NONE (0), CERT_OPTIONAL (1), CERT_REQUIRED (2): client certificates. */
  sslCertReqs: number;
  sslCiphers: string | null;
  /** VLLM_HTTP_TIMEOUT_KEEP_ALIVE: idle keep-alive seconds; null = Fastify's default. */
  keepAliveTimeoutSeconds: number | null;
  /** --runner: generate, pooling, or auto (from config.json's architectures). */
  runner: RunnerFlag;
  /** --convert: serve a generative model as an embedder / classifier. */
  convert: ConvertFlag;
  /** --pooler-config (JSON). */
  poolerConfig: PoolerConfigFlag | null;
  /** Deprecated --task; mapped onto runner / convert (vLLM's mapping) by resolveServerConfig. */
  task: TaskFlag | null;
  /** ortllm: where stored responses live: 'memory' (in-process LRU) or redis://host:port/db. */
  responsesStore: string;
  /** ortllm: seconds a stored response is kept after its last write (0 = until evicted). */
  responsesStoreTtlSeconds: number;
  /** ortllm: byte budget of the in-process responses store (least recently used go first). */
  responsesStoreMaxBytes: number;
  /** ortllm: seconds each Redis store call may take before it fails as unavailable (503). */
  responsesStoreTimeoutSeconds: number;
  /** ortllm: most responses a previous_response_id chain links (the new one included). */
  responsesChainMaxDepth: number;
  /** ortllm: largest stored conversation (JSON bytes) a previous_response_id continues. */
  responsesChainMaxBytes: number;
}

/** vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB default. */
export const DEFAULT_MAX_AUDIO_CLIP_FILESIZE_MB = 25;
export const DEFAULT_MAX_AUDIO_DURATION_SECONDS = 2 * 60 * 60;
/** The deprecated --task values (vLLM's TaskOption, text models). */
export const TASKS = ['auto', 'generate', 'embedding', 'embed', 'classify', 'score', 'reward'] as const;
export type TaskFlag = (typeof TASKS)[number];

/** Name reported for the built-in dummy model when no --served-model-name is given. */

/**
 * Text workers: two, so a normal prompt never waits behind a huge one, up to four on larger
 * machines (a quarter of the cores); an idle one costs only its copy of the tokenizer.
 */
export function defaultTokenizerPoolSize(): number {
  return Math.min(4, Math.max(2, Math.floor(availableParallelism() / 4)));
}

export const DUMMY_MODEL_NAME = 'ortllm-dummy';

/** vLLM's CPU batch defaults (engine/arg_utils.py get_batch_defaults); GPUs get 256 sequences. */
function defaultMaxNumSeqs(device: 'cpu' | 'cuda'): number {
  return device === 'cuda' ? 256 : 128;
}
const DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048;

const DEFAULTS: Omit<ServerConfig, 'servedModelNames' | 'maxNumSeqs' | 'apiKeys'> = {
  model: null,
  host: null,
  port: 8000,
  maxModelLen: null,
  maxNumBatchedTokens: DEFAULT_MAX_NUM_BATCHED_TOKENS,
  schedulingPolicy: 'fcfs',
  generationConfig: 'auto',
  chatTemplate: null,
  trustRequestChatTemplate: false,
  responseRole: 'assistant',
  chatTemplateContentFormat: 'auto',
  enableAutoToolChoice: false,
  toolCallParser: null,
  toolParserPlugin: null,
  reasoningParser: null,
  reasoningParserPlugin: null,
  excludeToolsWhenToolChoiceNone: false,
  tokensOnly: false,
  enableScaleOut: false,
  skipTokenizerInit: false,
  returnTokensAsTokenIds: false,
  enableRequestIdHeaders: false,
  enablePromptTokensDetails: false,
  enableForceIncludeUsage: false,
  maxLogprobs: 20,
  allowedOrigins: ['*'],
  allowedMethods: ['*'],
  allowedHeaders: ['*'],
  allowCredentials: false,
  rootPath: '',
  forwardedAllowIps: ['127.0.0.1'],
  sslKeyfile: null,
  sslCertfile: null,
  sslCaCerts: null,
  logLevel: 'info',
  disableUvicornAccessLog: false,
  enableLogRequests: false,
  loadFormat: 'auto',
  device: 'cpu',
  cpuThreads: null,
  kvCacheMemoryBytes: null,
  blockSize: 16,
  enablePrefixCaching: true,
  disableFastapiDocs: false,
  maxRequestBodyBytes: 32 * 2 ** 20,
  shutdownTimeoutSeconds: 30,
  maxJsonDepth: 128,
  maxJsonObjectKeys: 10_000,
  maxJsonArrayLength: 1_048_576,
  maxJsonStringLength: 8 * 2 ** 20,
  bodyReadTimeoutSeconds: 60,
  maxNumQueuedReqs: 4096,
  streamStallTimeoutSeconds: 60,
  tokenizerPoolSize: defaultTokenizerPoolSize(),
  maxAudioClipFilesizeMb: DEFAULT_MAX_AUDIO_CLIP_FILESIZE_MB,
  maxAudioDurationSeconds: DEFAULT_MAX_AUDIO_DURATION_SECONDS,
  structuredOutputsConfig: DEFAULT_STRUCTURED_OUTPUTS_CONFIG,
  structuredOutputsLimits: DEFAULT_STRUCTURED_OUTPUTS_LIMITS,
  guidedDecodingDisableAnyWhitespace: false,
  guidedDecodingDisableAdditionalProperties: false,
  unknownRequestFields: 'warn',
  dtype: 'auto',
  seed: 0,
  gpuMemoryUtilization: null,
  kvCacheDtype: 'auto',
  numGpuBlocksOverride: null,
  tokenizer: null,
  tokenizerMode: 'auto',
  maxNumPartialPrefills: 1,
  maxLongPartialPrefills: 1,
  longPrefillTokenThreshold: 0,
  disableLogStats: false,
  logStatsIntervalSeconds: 10,
  enableServerLoadTracking: false,
  enableSleepMode: false,
  devMode: false,
  maxLogLen: null,
  overrideGenerationConfig: null,
  defaultChatTemplateKwargs: null,
  hfOverrides: null,
  ropeTheta: null,
  ropeScaling: null,
  uds: null,
  disableAccessLogForEndpoints: [],
  sslCertReqs: 0,
  sslCiphers: null,
  keepAliveTimeoutSeconds: null,
  runner: 'auto',
  convert: 'auto',
  poolerConfig: null,
  task: null,
  responsesStore: 'memory',
  // OpenAI keeps stored responses for 30 days.
  responsesStoreTtlSeconds: 30 * 24 * 3600,
  responsesStoreMaxBytes: 256 * 2 ** 20,
  responsesStoreTimeoutSeconds: 2,
  responsesChainMaxDepth: 100,
  responsesChainMaxBytes: 4 * 2 ** 20,
};

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

/**
 * Fills defaults, applies VLLM_API_KEY and the --tokens-only implications, validates.
 * `input` uses ServerConfig's keys; undefined means "not given".
 */
export function resolveServerConfig(
  input: Partial<ServerConfig>,
  env: NodeJS.ProcessEnv = process.env,
): ServerConfig {
  const flags = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as Partial<ServerConfig>;
  // VLLM_* environment variables fill what the flags left unset (flags win, as in vLLM).
  let fromEnv: Partial<ServerConfig>;
  try {
    fromEnv = fromVllmEnv(env, flags);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const given: Partial<ServerConfig> = { ...fromEnv, ...flags };
  const device = given.device ?? DEFAULTS.device;
  const apiKeys = given.apiKeys ?? [];
  const model = given.model ?? DEFAULTS.model;
  const config: ServerConfig = {
    ...DEFAULTS,
    ...given,
    device,
    apiKeys,
    servedModelNames: given.servedModelNames?.length ? given.servedModelNames : [model ?? DUMMY_MODEL_NAME],
    maxNumSeqs: given.maxNumSeqs ?? defaultMaxNumSeqs(device),
  };
  // vLLM: concurrent partial prefills without a threshold treat prompts over 4% of the context as long.
  if (config.maxNumPartialPrefills > 1 && config.longPrefillTokenThreshold === 0 && config.maxModelLen !== null) {
    config.longPrefillTokenThreshold = Math.floor(config.maxModelLen * 0.04);
  }
  // --tokens-only forces the tokenizer off and the scale-out routes on (vLLM #55176).
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

function validate(c: ServerConfig): void {
  check(Number.isInteger(c.port) && c.port >= 0 && c.port <= 65535, `--port must be 0..65535, got ${c.port}`);
  check(c.maxModelLen === null || (Number.isInteger(c.maxModelLen) && c.maxModelLen > 0), '--max-model-len must be a positive integer');
  check(Number.isInteger(c.maxNumSeqs) && c.maxNumSeqs > 0, '--max-num-seqs must be a positive integer');
  check(Number.isInteger(c.maxNumBatchedTokens) && c.maxNumBatchedTokens > 0, '--max-num-batched-tokens must be a positive integer');
  check(['fcfs', 'priority'].includes(c.schedulingPolicy), "--scheduling-policy must be 'fcfs' or 'priority'");
  check(['auto', 'dummy'].includes(c.loadFormat), "--load-format must be 'auto' or 'dummy'");
  check(['cpu', 'cuda'].includes(c.device), "--device must be 'cpu' or 'cuda'");
  check(LOG_LEVELS.includes(c.logLevel), `--uvicorn-log-level must be one of ${LOG_LEVELS.join(', ')}`);
  check(UNKNOWN_FIELDS_ACTIONS.includes(c.unknownRequestFields), `--unknown-request-fields must be one of ${UNKNOWN_FIELDS_ACTIONS.join(', ')}`);
  check(Number.isInteger(c.blockSize) && c.blockSize > 0 && c.blockSize <= 1024, '--block-size must be an integer in 1..1024');
  check(c.kvCacheMemoryBytes === null || c.kvCacheMemoryBytes > 0, '--kv-cache-memory must be a positive size');
  check(Number.isInteger(c.maxLogprobs) && c.maxLogprobs >= -1, '--max-logprobs must be an integer >= -1');
  check(
    Object.values(c.structuredOutputsLimits).every((v) => typeof v === 'number' && v > 0),
    '--structured-outputs-limits values must be positive numbers',
  );
  check(c.servedModelNames.every((n) => n.length > 0), '--served-model-name must not be empty');
  check(c.apiKeys.every((k) => k.length > 0), '--api-key must not be empty');
  check(Number.isInteger(c.maxRequestBodyBytes) && c.maxRequestBodyBytes > 0, '--max-request-body-size must be a positive size');
  check(c.shutdownTimeoutSeconds >= 0, '--shutdown-timeout must be >= 0');
  for (const [flag, value] of [
    ['--max-json-depth', c.maxJsonDepth],
    ['--max-json-object-keys', c.maxJsonObjectKeys],
    ['--max-json-array-length', c.maxJsonArrayLength],
    ['--max-json-string-length', c.maxJsonStringLength],
  ] as const) {
    check(Number.isInteger(value) && value > 0, `${flag} must be a positive integer`);
  }
  check(c.bodyReadTimeoutSeconds >= 0, '--body-read-timeout must be >= 0');
  check(c.maxNumQueuedReqs === null || (Number.isInteger(c.maxNumQueuedReqs) && c.maxNumQueuedReqs > 0), '--max-num-queued-reqs must be a positive integer');
  check(c.streamStallTimeoutSeconds >= 0, '--stream-stall-timeout must be >= 0');
  check(Number.isInteger(c.tokenizerPoolSize) && c.tokenizerPoolSize >= 0, '--tokenizer-pool-size must be an integer >= 0');
  check(Number.isFinite(c.maxAudioClipFilesizeMb) && c.maxAudioClipFilesizeMb > 0, '--max-audio-clip-filesize-mb (or VLLM_MAX_AUDIO_CLIP_FILESIZE_MB) must be a positive number of MiB');
  check(Number.isFinite(c.maxAudioDurationSeconds) && c.maxAudioDurationSeconds > 0, '--max-audio-duration-s must be a positive number of seconds');
  check((c.sslKeyfile === null) === (c.sslCertfile === null), '--ssl-keyfile and --ssl-certfile must be given together');
  check(['auto', 'string', 'openai'].includes(c.chatTemplateContentFormat), "--chat-template-content-format must be 'auto', 'string' or 'openai'");
  check(!c.enableAutoToolChoice || c.toolCallParser !== null, '--enable-auto-tool-choice requires --tool-call-parser');
  check(['auto', 'float32', 'float16', 'bfloat16'].includes(c.dtype), "--dtype must be 'auto', 'float32', 'float16' or 'bfloat16'");
  check(Number.isInteger(c.seed), '--seed must be an integer');
  check(c.gpuMemoryUtilization === null || (c.gpuMemoryUtilization > 0 && c.gpuMemoryUtilization <= 1), '--gpu-memory-utilization must be in (0, 1]');
  check(c.numGpuBlocksOverride === null || (Number.isInteger(c.numGpuBlocksOverride) && c.numGpuBlocksOverride > 0), '--num-gpu-blocks-override must be a positive integer');
  check(Number.isInteger(c.maxNumPartialPrefills) && c.maxNumPartialPrefills >= 1, '--max-num-partial-prefills must be an integer >= 1');
  check(Number.isInteger(c.maxLongPartialPrefills) && c.maxLongPartialPrefills >= 1, '--max-long-partial-prefills must be an integer >= 1');
  check(c.maxLongPartialPrefills <= c.maxNumPartialPrefills, '--max-long-partial-prefills must be <= --max-num-partial-prefills');
  check(Number.isInteger(c.longPrefillTokenThreshold) && c.longPrefillTokenThreshold >= 0, '--long-prefill-token-threshold must be an integer >= 0');
  check(c.maxModelLen === null || c.longPrefillTokenThreshold <= c.maxModelLen, '--long-prefill-token-threshold cannot be greater than --max-model-len');
  check(c.logStatsIntervalSeconds > 0, 'VLLM_LOG_STATS_INTERVAL must be > 0');
  check([0, 1, 2].includes(c.sslCertReqs), '--ssl-cert-reqs must be 0 (none), 1 (optional) or 2 (required)');
  check(c.maxLogLen === null || (Number.isInteger(c.maxLogLen) && c.maxLogLen >= 0), '--max-log-len must be an integer >= 0');
  check(c.overrideGenerationConfig === null || (typeof c.overrideGenerationConfig === 'object' && !Array.isArray(c.overrideGenerationConfig)), '--override-generation-config must be a JSON object');
  check(['auto', 'generate', 'pooling'].includes(c.runner), "--runner must be 'auto', 'generate' or 'pooling'");
  check(['auto', 'none', 'embed', 'classify', 'reward'].includes(c.convert), "--convert must be 'auto', 'none', 'embed', 'classify' or 'reward'");
  check(c.task === null || (TASKS as readonly string[]).includes(c.task), `--task must be one of ${TASKS.join(', ')}`);
  check(c.responsesStore === 'memory' || /^rediss?:\/\/./i.test(c.responsesStore), "--responses-store must be 'memory' or a redis:// (rediss://) URL");
  check(Number.isFinite(c.responsesStoreTtlSeconds) && c.responsesStoreTtlSeconds >= 0, '--responses-store-ttl must be >= 0');
  check(Number.isInteger(c.responsesStoreMaxBytes) && c.responsesStoreMaxBytes > 0, '--responses-store-max-size must be a positive size');
  const badProxy = c.forwardedAllowIps.find((entry) => !isTrustedProxyEntry(entry));
  check(badProxy === undefined, `--forwarded-allow-ips: '${badProxy}' is not an IP address, a CIDR range or '*'`);
  check(Number.isFinite(c.responsesStoreTimeoutSeconds) && c.responsesStoreTimeoutSeconds > 0, '--responses-store-timeout must be > 0');
  check(Number.isInteger(c.responsesChainMaxDepth) && c.responsesChainMaxDepth > 0, '--responses-chain-max-depth must be a positive integer');
  check(Number.isInteger(c.responsesChainMaxBytes) && c.responsesChainMaxBytes > 0, '--responses-chain-max-size must be a positive size');
}

/** The model name reported in responses and the metrics `model_name` label. */
export function reportedModelName(c: ServerConfig): string {
  return c.servedModelNames[0];
}

/** --rope-theta and --rope-scaling folded into --hf-overrides (null when none is given). */
function hfOverridesOf(c: ServerConfig): Record<string, unknown> | null {
  const merged = {
    ...(c.ropeTheta !== null ? { rope_theta: c.ropeTheta } : {}),
    ...(c.ropeScaling !== null ? { rope_scaling: c.ropeScaling } : {}),
    ...(c.hfOverrides ?? {}),
  };
  return Object.keys(merged).length > 0 ? merged : null;
}

export function toLoadModelOptions(c: ServerConfig): LoadModelOptions {
  return {
    model: c.model,
    loadFormat: c.loadFormat,
    loadWeights: true,
    skipTokenizer: c.skipTokenizerInit,
    chatTemplate: c.chatTemplate,
    generationConfig: c.generationConfig,
    overrideGenerationConfig: c.overrideGenerationConfig,
    tokenizer: c.tokenizer,
    hfOverrides: hfOverridesOf(c),
    serving: { runner: c.runner, convert: c.convert, poolerConfig: c.poolerConfig },
  };
}

export function toEngineOptions(c: ServerConfig): EngineOptions {
  return {
    load: toLoadModelOptions(c),
    modelName: reportedModelName(c),
    maxModelLen: c.maxModelLen,
    maxNumSeqs: c.maxNumSeqs,
    maxNumBatchedTokens: c.maxNumBatchedTokens,
    schedulingPolicy: c.schedulingPolicy,
    kvCacheMemoryBytes: c.kvCacheMemoryBytes,
    blockSize: c.blockSize,
    enablePrefixCaching: c.enablePrefixCaching,
    device: c.device,
    intraOpThreads: c.cpuThreads,
    useWorker: true,
    maxNumQueuedReqs: c.maxNumQueuedReqs,
    tokenizerPoolSize: c.skipTokenizerInit ? 0 : c.tokenizerPoolSize,
    structuredOutputs: {
      disableAnyWhitespace: c.structuredOutputsConfig.disableAnyWhitespace,
      disableAdditionalProperties: c.structuredOutputsConfig.disableAdditionalProperties,
      maxWhitespace: c.structuredOutputsConfig.maxWhitespace,
    },
    structuredOutputsLimits: c.structuredOutputsLimits,
    dtype: c.dtype,
    seed: c.seed,
    gpuMemoryUtilization: c.gpuMemoryUtilization,
    kvCacheDtype: c.kvCacheDtype,
    numBlocksOverride: c.numGpuBlocksOverride,
    partialPrefills: {
      maxNumPartialPrefills: c.maxNumPartialPrefills,
      maxLongPartialPrefills: c.maxLongPartialPrefills,
      longPrefillTokenThreshold: c.longPrefillTokenThreshold,
    },
  };
}
