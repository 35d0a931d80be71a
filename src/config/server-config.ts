// ServerConfig: every `ortllm serve` flag, its vLLM name, default and validation, in one place.
// The CLI builds its options from SERVER_FLAGS; tests and scripts call resolveServerConfig()
// with a partial object. toEngineOptions() maps the result onto the engine's contract.

import type { EngineOptions } from '../engine/types';
import type { LoadModelOptions } from '../model/types';

export type LogLevel = 'critical' | 'error' | 'warning' | 'info' | 'debug' | 'trace';
export const LOG_LEVELS: readonly LogLevel[] = ['critical', 'error', 'warning', 'info', 'debug', 'trace'];

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
  sslKeyfile: string | null;
  sslCertfile: string | null;
  sslCaCerts: string | null;
  logLevel: LogLevel;
  disableUvicornAccessLog: boolean;
  enableLogRequests: boolean;
  loadFormat: 'auto' | 'dummy';
  device: 'cpu' | 'cuda';
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
}

/** Name reported for the built-in dummy model when no --served-model-name is given. */
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
  sslKeyfile: null,
  sslCertfile: null,
  sslCaCerts: null,
  logLevel: 'info',
  disableUvicornAccessLog: false,
  enableLogRequests: false,
  loadFormat: 'auto',
  device: 'cpu',
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
  tokenizerPoolSize: 1,
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
  const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as Partial<ServerConfig>;
  const device = given.device ?? DEFAULTS.device;
  const envKey = env.VLLM_API_KEY;
  const apiKeys = given.apiKeys?.length ? given.apiKeys : envKey ? [envKey] : [];
  const model = given.model ?? DEFAULTS.model;
  const config: ServerConfig = {
    ...DEFAULTS,
    ...given,
    device,
    apiKeys,
    servedModelNames: given.servedModelNames?.length ? given.servedModelNames : [model ?? DUMMY_MODEL_NAME],
    maxNumSeqs: given.maxNumSeqs ?? defaultMaxNumSeqs(device),
  };
  // --tokens-only forces the tokenizer off and the scale-out routes on (vLLM #55176).
  if (config.tokensOnly) {
    config.skipTokenizerInit = true;
    config.enableScaleOut = true;
  }
  config.rootPath = normalizeRootPath(config.rootPath);
  validate(config);
  return config;
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
  check(Number.isInteger(c.blockSize) && c.blockSize > 0 && c.blockSize <= 1024, '--block-size must be an integer in 1..1024');
  check(c.kvCacheMemoryBytes === null || c.kvCacheMemoryBytes > 0, '--kv-cache-memory must be a positive size');
  check(Number.isInteger(c.maxLogprobs) && c.maxLogprobs >= -1, '--max-logprobs must be an integer >= -1');
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
  check((c.sslKeyfile === null) === (c.sslCertfile === null), '--ssl-keyfile and --ssl-certfile must be given together');
}

/** The model name reported in responses and the metrics `model_name` label. */
export function reportedModelName(c: ServerConfig): string {
  return c.servedModelNames[0];
}

function toLoadModelOptions(c: ServerConfig): LoadModelOptions {
  return {
    model: c.model,
    loadFormat: c.loadFormat,
    loadWeights: true,
    skipTokenizer: c.skipTokenizerInit,
    chatTemplate: c.chatTemplate,
    generationConfig: c.generationConfig,
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
    intraOpThreads: null,
    useWorker: true,
    maxNumQueuedReqs: c.maxNumQueuedReqs,
    tokenizerPoolSize: c.skipTokenizerInit ? 0 : c.tokenizerPoolSize,
  };
}
