// Every `ortllm serve` flag, declared once: config key, type, default, validation, command-line
// spellings (vLLM's), VLLM_* variable and the area it configures. ServerConfig, the CLI options,
// `--help`, docs/serve-flags.md's flag table, the environment and the per-area configs are all derived from
// this object; adding a flag is one entry here plus the code that uses its value.

import type { ConvertFlag, PoolerConfigFlag, RunnerFlag } from '../model/types';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS, type StructuredOutputsLimits } from '../engine/structured/grammar-limits';
import {
  cacheFlag,
  deviceFlag,
  frontendFlag,
  loadFlag,
  loraFlag,
  modelFlag,
  observabilityFlag,
  responsesFlag,
  schedulerFlag,
  structuredOutputsFlag,
} from './flag-declaration';
import { nonNegativeInt, parseDtype, parseKvCacheDtype, parseLoadFormat, parseNonNegative, parseTokenizerMode, positiveInt } from './flag-parsers';
import {
  DEFAULT_MAX_AUDIO_CLIP_FILESIZE_MB,
  DEFAULT_MAX_AUDIO_DURATION_SECONDS,
  DUMMY_MODEL_NAME,
  defaultTokenizerPoolSize,
  LOG_LEVELS,
  TASKS,
  UNKNOWN_FIELDS_ACTIONS,
  type KvCacheDtypeFlag,
  type LogLevel,
  type ModelDtype,
  type TaskFlag,
  type TokenizerMode,
  type UnknownFieldsAction,
} from './flag-values';
import { parsePoolerConfig } from './pooler-config-flag';
import { LORA_DTYPES, MAX_LORA_RANKS, parseLoraModule, type LoraDtypeFlag, type LoraModulePath } from './lora-modules-flag';
import { DEFAULT_STRUCTURED_OUTPUTS_CONFIG, parseStructuredOutputsConfig, type StructuredOutputsConfig } from './structured-outputs-config';
import { parseStructuredOutputsLimits } from './structured-outputs-limits';
import { parseSpeculativeConfig, type SpeculativeConfig } from '../engine/speculative/speculative-config';
import { parseKvEventsConfig, type KvEventsConfig } from '../engine/kv-events/kv-events-config';
import { parseKvTransferConfig, type KvTransferConfig } from '../engine/kv-transfer/kv-transfer-config';
import { knownKvConnectors } from '../engine/kv-transfer/connectors';
import { isTrustedProxyEntry } from './trusted-proxies';
import { parseByteSize, parseFraction, parseHumanInt, parseInteger, parseJsonObject, parsePositiveNumber, parseStringList } from './units';
import { countCpuList, LOGGING_LEVELS, positiveNumberEnv, truthy } from './env-values';
import { parseLimitMmPerPrompt, parseMediaIoKwargs, type MediaIoKwargs, type MmLimits } from './multimodal-config';
import { DEFAULT_MAX_IMAGE_FILESIZE_MB, DEFAULT_MAX_IMAGE_PIXELS, isDirectory } from './media-limits';

export const FLAGS = {
  /** GGUF file or Hugging Face directory; null = the built-in dummy model. */
  model: modelFlag<string | null>({
    default: null,
    cli: [{ flags: '--model <model>', description: 'GGUF file or Hugging Face model directory (same as the MODEL argument)', defaultText: 'the built-in dummy model' }],
  }),
  /** null = all interfaces. */
  host: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--host <host>', description: 'Interface to listen on', defaultText: 'all interfaces' }],
  }),
  /** 0 = pick a free port. */
  port: frontendFlag<number>({
    default: 8000,
    cli: [{ flags: '--port <port>', description: 'Port to listen on; 0 picks a free port (the ready line prints it)', parse: parseInteger, defaultText: '8000' }],
    valid: (v) => Number.isInteger(v) && v >= 0 && v <= 65535,
    invalid: (v) => `--port must be 0..65535, got ${v}`,
  }),
  /** --api-key (repeatable) or VLLM_API_KEY; empty = no auth. */
  apiKeys: frontendFlag<string[]>({
    default: [],
    cli: [{ flags: '--api-key <keys...>', description: 'Require `Authorization: Bearer <key>`; several keys allowed (repeat or list). Env VLLM_API_KEY when absent', defaultText: 'none' }],
    valid: (v) => v.every((k) => k.length > 0),
    invalid: '--api-key must not be empty',
    env: { name: 'VLLM_API_KEY', meaning: 'API key when no --api-key is given', read: (v) => [v] },
  }),
  /** First is reported in responses and metrics; any is accepted in requests. */
  servedModelNames: modelFlag<string[]>({
    default: ({ model }) => [model ?? DUMMY_MODEL_NAME],
    cli: [{ flags: '--served-model-name <names...>', description: 'Model names accepted in requests; the first is reported in responses and metrics', defaultText: 'the model path' }],
    valid: (v) => v.every((n) => n.length > 0),
    invalid: '--served-model-name must not be empty',
  }),
  maxModelLen: modelFlag<number | null>({
    default: null,
    cli: [{ flags: '--max-model-len <tokens>', description: "Context length (prompt + output); accepts 4096, 32k (1000s), 32K (1024s)", parse: parseHumanInt, defaultText: "the model's" }],
    valid: (v) => v === null || (Number.isInteger(v) && v > 0),
    invalid: '--max-model-len must be a positive integer',
  }),
  maxNumSeqs: schedulerFlag<number>({
    // vLLM's CPU batch defaults (engine/arg_utils.py get_batch_defaults); GPUs get 256 sequences.
    default: ({ device }) => (device === 'cuda' ? 256 : 128),
    cli: [{ flags: '--max-num-seqs <n>', description: 'Most sequences in one batch', parse: positiveInt, defaultText: '128 on cpu, 256 on cuda' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-num-seqs must be a positive integer',
  }),
  maxNumBatchedTokens: schedulerFlag<number>({
    default: 2048,
    cli: [{ flags: '--max-num-batched-tokens <n>', description: 'Token budget of one engine step', parse: parseHumanInt, defaultText: '2048' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-num-batched-tokens must be a positive integer',
  }),
  schedulingPolicy: schedulerFlag<'fcfs' | 'priority'>({
    default: 'fcfs',
    cli: [{ flags: '--scheduling-policy <policy>', description: "'fcfs' or 'priority' (request field `priority`, lower first)", choices: ['fcfs', 'priority'], defaultText: 'fcfs' }],
    valid: (v) => ['fcfs', 'priority'].includes(v),
    invalid: "--scheduling-policy must be 'fcfs' or 'priority'",
  }),
  /** --speculative-config; null = no speculative decoding. */
  speculativeConfig: schedulerFlag<SpeculativeConfig | null>({
    default: null,
    cli: [{ flags: '--speculative-config <json>', description: 'Speculative decoding as JSON: {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_max": n, "prompt_lookup_min": m} or {"method": "draft_model", "model": path, "num_speculative_tokens": k}; disable_by_batch_size: off for batches this large', parse: parseSpeculativeConfig, defaultText: 'none' }],
  }),
  /** --kv-transfer-config; null = no KV transfer between replicas. */
  kvTransferConfig: cacheFlag<KvTransferConfig | null>({
    default: null,
    cli: [{ flags: '--kv-transfer-config <json>', description: 'Prefill/decode disaggregation as JSON: {"kv_connector": "TcpConnector", "kv_role": "kv_both", "kv_port": 5600, "kv_ip": host, "engine_id": id}; kv_connector_extra_config: abort_request_timeout, transfer_timeout (seconds)', parse: (text: string) => parseKvTransferConfig(text, knownKvConnectors()), defaultText: 'none' }],
  }),
  /** KV cache budget in bytes; null = the engine's default share of memory. */
  kvCacheMemoryBytes: cacheFlag<number | null>({
    default: null,
    cli: [
      { flags: '--kv-cache-memory <size>', description: 'KV cache budget in bytes; accepts 512MiB, 2GiB', parse: parseByteSize, defaultText: 'a share of free memory' },
      { flags: '--kv-cache-memory-bytes <size>', description: 'Same as --kv-cache-memory (vLLM spelling)', parse: parseByteSize },
    ],
    valid: (v) => v === null || v > 0,
    invalid: '--kv-cache-memory must be a positive size',
    env: {
      name: 'VLLM_CPU_KVCACHE_SPACE',
      meaning: 'KV cache budget in GiB on --device cpu when neither --kv-cache-memory-bytes nor --gpu-memory-utilization is given',
      read: (v, given) =>
        (given.device ?? 'cpu') === 'cpu' && given.gpuMemoryUtilization === undefined && Number(v) !== 0
          ? Math.floor(positiveNumberEnv('VLLM_CPU_KVCACHE_SPACE', v) * 2 ** 30)
          : undefined,
    },
  }),
  /** --mm-processor-cache-gb: GiB of encoder outputs kept by image hash (0: none kept across requests). */
  mmProcessorCacheGb: cacheFlag<number>({
    default: 4,
    cli: [{ flags: '--mm-processor-cache-gb <gib>', description: 'GiB of image encoder outputs kept by image hash, so an image sent again is not encoded again (0 disables; vLLM keeps processor outputs under this flag)', parse: parseNonNegative, defaultText: '4' }],
    valid: (v) => Number.isFinite(v) && v >= 0,
    invalid: '--mm-processor-cache-gb must be a number >= 0',
  }),
  blockSize: cacheFlag<number>({
    default: 16,
    cli: [{ flags: '--block-size <tokens>', description: 'Tokens per KV cache block', parse: positiveInt, defaultText: '16' }],
    valid: (v) => Number.isInteger(v) && v > 0 && v <= 1024,
    invalid: '--block-size must be an integer in 1..1024',
  }),
  enablePrefixCaching: cacheFlag<boolean>({
    default: true,
    cli: [
      { flags: '--enable-prefix-caching', description: 'Reuse KV blocks of shared prompt prefixes', defaultText: 'on' },
      { flags: '--no-enable-prefix-caching', description: 'Turn prefix caching off' },
    ],
  }),
  /** --kv-events-config; null = no KV cache events. */
  kvEventsConfig: cacheFlag<KvEventsConfig | null>({
    default: null,
    cli: [{ flags: '--kv-events-config <json>', description: 'Publish prefix-cache changes as vLLM KV events over ZMQ: {"enable_kv_cache_events": true, "endpoint": "tcp://*:5557", "replay_endpoint": null, "buffer_steps": 10000, "hwm": 100000, "max_queue_size": 100000, "topic": ""}; publisher "zmq" (default when enabled) or "null"', parse: parseKvEventsConfig, defaultText: 'none' }],
  }),
  generationConfig: modelFlag<string>({
    default: 'auto',
    cli: [{ flags: '--generation-config <source>', description: "'auto' applies the model's generation_config.json defaults, 'vllm' ignores them, or a folder path", defaultText: 'auto' }],
  }),
  chatTemplate: modelFlag<string | null>({
    default: null,
    cli: [{ flags: '--chat-template <template>', description: 'Chat template file or inline Jinja string', defaultText: "the model's" }],
  }),
  trustRequestChatTemplate: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--trust-request-chat-template', description: 'Allow a per-request `chat_template` (otherwise 400)' }],
  }),
  responseRole: frontendFlag<string>({
    default: 'assistant',
    cli: [{ flags: '--response-role <role>', description: 'Role of generated chat messages', defaultText: 'assistant' }],
  }),
  /** How message content reaches the template: 'auto' detects it from the template. */
  chatTemplateContentFormat: frontendFlag<'auto' | 'string' | 'openai'>({
    default: 'auto',
    cli: [{ flags: '--chat-template-content-format <format>', description: "How message content reaches the template: 'string' (parts joined into one string), 'openai' (a list of {type, text} parts), 'auto' (detected from the template)", choices: ['auto', 'string', 'openai'], defaultText: 'auto' }],
    valid: (v) => ['auto', 'string', 'openai'].includes(v),
    invalid: "--chat-template-content-format must be 'auto', 'string' or 'openai'",
  }),
  /** Parse tool calls out of the text for tool_choice "auto" (needs toolCallParser). */
  enableAutoToolChoice: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-auto-tool-choice', description: 'Allow tool_choice "auto": tool calls are parsed out of the model\'s text (needs --tool-call-parser)' }],
  }),
  /** Registered name of the tool-call parser (hermes, llama3_json, mistral, pythonic, qwen3_coder, or a plugin's). */
  toolCallParser: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--tool-call-parser <name>', description: 'Tool-call format of the model: hermes, llama3_json (llama4_json), mistral, openai, phi4_mini_json, pythonic, qwen3_coder, or a name a plugin registers' }],
  }),
  /** A JS/TS file registering more tool-call parsers. */
  toolParserPlugin: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--tool-parser-plugin <file>', description: 'A .js/.cjs/.mjs/.ts file that registers more tool-call parsers (see README)' }],
  }),
  /** Registered name of the reasoning parser (deepseek_r1, openai_gptoss, qwen3, or a plugin's). */
  reasoningParser: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--reasoning-parser <name>', description: 'Split the model\'s thinking into `reasoning`: deepseek_r1, openai_gptoss, qwen3, or a name a plugin registers' }],
  }),
  /** A JS/TS file registering more reasoning parsers. */
  reasoningParserPlugin: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--reasoning-parser-plugin <file>', description: 'A .js/.cjs/.mjs/.ts file that registers more reasoning parsers (see README)' }],
  }),
  /** tool_choice "none" keeps `tools` out of the prompt. */
  excludeToolsWhenToolChoiceNone: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--exclude-tools-when-tool-choice-none', description: 'With tool_choice "none", leave `tools` out of the prompt (by default the template still renders them)' }],
  }),
  tokensOnly: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--tokens-only', description: 'Only the tokens-in/tokens-out routes (implies --skip-tokenizer-init and --enable-scale-out; adds legacy POST /abort_requests)' }],
  }),
  enableScaleOut: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-scale-out', description: 'Register /inference/v1/generate, /inference/v1/abort_requests, render and derender routes' }],
  }),
  /** Requests may name LoRA adapters (vLLM's LoRAConfig, built only with this). */
  enableLora: loraFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-lora', description: 'Serve LoRA adapters: --lora-modules, /v1/load_lora_adapter, `model` naming an adapter' }],
  }),
  /** Static adapters loaded at start-up (a failure fails the start). */
  loraModules: frontendFlag<LoraModulePath[]>({
    default: [],
    cli: [{ flags: '--lora-modules <modules...>', description: 'LoRA adapters served under their own model name: name=path, or JSON {"name": ..., "path": ..., "base_model_name": ...}; several allowed (needs --enable-lora)', parse: parseLoraModule }],
    valid: (v) => new Set(v.map((m) => m.name)).size === v.length,
    invalid: '--lora-modules names each adapter once',
  }),
  maxLoras: loraFlag<number>({
    default: 1,
    cli: [{ flags: '--max-loras <n>', description: 'Most adapters one engine step runs (requests of others wait)', parse: positiveInt, defaultText: '1' }],
    valid: (v) => Number.isInteger(v) && v >= 1,
    invalid: (v) => `max_loras (${v}) must be >= 1.`,
  }),
  maxLoraRank: loraFlag<number>({
    default: 16,
    cli: [{ flags: '--max-lora-rank <rank>', description: `Highest adapter rank accepted: ${MAX_LORA_RANKS.join(', ')}`, parse: positiveInt, defaultText: '16' }],
    valid: (v) => MAX_LORA_RANKS.includes(v),
    invalid: (v) => `--max-lora-rank must be one of ${MAX_LORA_RANKS.join(', ')}, got ${v}`,
  }),
  /** null = --max-loras. */
  maxCpuLoras: loraFlag<number | null>({
    default: null,
    cli: [{ flags: '--max-cpu-loras <n>', description: 'Adapters kept loaded in memory (the least recently used is reloaded from its path when needed again); at least --max-loras', parse: positiveInt, defaultText: '--max-loras' }],
  }),
  loraDtype: loraFlag<LoraDtypeFlag>({
    default: 'auto',
    cli: [{ flags: '--lora-dtype <dtype>', description: "Type adapter weights are rounded to (auto: the model's --dtype)", choices: LORA_DTYPES, defaultText: 'auto' }],
    valid: (v) => LORA_DTYPES.includes(v),
    invalid: `--lora-dtype must be one of ${LORA_DTYPES.join(', ')}`,
  }),
  /** Every layer attends over the whole context, capped at the model's sliding window (vLLM's --disable-sliding-window). */
  disableSlidingWindow: modelFlag<boolean>({
    default: false,
    cli: [{ flags: '--disable-sliding-window', description: "Full attention on every layer of a sliding-window model, with the context capped at its window (no effect on models without one)" }],
  }),
  skipTokenizerInit: modelFlag<boolean>({
    default: false,
    cli: [{ flags: '--skip-tokenizer-init', description: 'Load no tokenizer (token ids in and out only)' }],
  }),
  returnTokensAsTokenIds: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--return-tokens-as-token-ids', description: 'Show logprob tokens as "token_id:N"' }],
  }),
  enableRequestIdHeaders: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-request-id-headers', description: 'Echo X-Request-Id (or a fresh id) in every response' }],
  }),
  enablePromptTokensDetails: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-prompt-tokens-details', description: 'Add usage.prompt_tokens_details.cached_tokens' }],
  }),
  enableForceIncludeUsage: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-force-include-usage', description: 'Include usage on every response, streaming included' }],
  }),
  maxLogprobs: frontendFlag<number>({
    default: 20,
    cli: [{ flags: '--max-logprobs <n>', description: 'Largest `logprobs` / `top_logprobs` a request may ask (-1 = no limit)', parse: parseInteger, defaultText: '20' }],
    valid: (v) => Number.isInteger(v) && v >= -1,
    invalid: '--max-logprobs must be an integer >= -1',
  }),
  allowedOrigins: frontendFlag<string[]>({
    default: ['*'],
    cli: [{ flags: '--allowed-origins <list>', description: 'CORS origins, JSON list or comma-separated', parse: parseStringList, defaultText: '["*"]' }],
  }),
  allowedMethods: frontendFlag<string[]>({
    default: ['*'],
    cli: [{ flags: '--allowed-methods <list>', description: 'CORS methods, JSON list or comma-separated', parse: parseStringList, defaultText: '["*"]' }],
  }),
  allowedHeaders: frontendFlag<string[]>({
    default: ['*'],
    cli: [{ flags: '--allowed-headers <list>', description: 'CORS headers, JSON list or comma-separated', parse: parseStringList, defaultText: '["*"]' }],
  }),
  allowCredentials: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--allow-credentials', description: 'CORS: allow credentials' }],
  }),
  /** Path prefix when served behind a path-rewriting proxy ('' = none). */
  rootPath: frontendFlag<string>({
    default: '',
    cli: [{ flags: '--root-path <path>', description: 'Path prefix when behind a path-based proxy (requests with or without it are served)', defaultText: 'none' }],
  }),
  /** --forwarded-allow-ips: peers trusted to set X-Forwarded-Proto / X-Forwarded-Host ('*' = any). */
  forwardedAllowIps: frontendFlag<string[]>({
    default: ['127.0.0.1'],
    cli: [{ flags: '--forwarded-allow-ips <list>', description: "(uvicorn) Peers (IPs, CIDR ranges or '*') whose X-Forwarded-Proto / X-Forwarded-Host name the server in the served /openapi.json", parse: parseStringList, defaultText: '127.0.0.1' }],
    valid: (v) => v.every(isTrustedProxyEntry),
    invalid: (v) => `--forwarded-allow-ips: '${v.find((entry) => !isTrustedProxyEntry(entry))}' is not an IP address, a CIDR range or '*'`,
  }),
  sslKeyfile: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--ssl-keyfile <file>', description: 'TLS private key (PEM); serve HTTPS with --ssl-certfile' }],
  }),
  sslCertfile: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--ssl-certfile <file>', description: 'TLS certificate chain (PEM)' }],
  }),
  sslCaCerts: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--ssl-ca-certs <file>', description: 'CA certificates (PEM) to trust' }],
  }),
  logLevel: observabilityFlag<LogLevel>({
    default: 'info',
    cli: [
      { flags: '--uvicorn-log-level <level>', description: 'Log level', choices: LOG_LEVELS, defaultText: 'info' },
      { flags: '--log-level <level>', description: 'Same as --uvicorn-log-level', choices: LOG_LEVELS },
    ],
    valid: (v) => LOG_LEVELS.includes(v),
    invalid: `--uvicorn-log-level must be one of ${LOG_LEVELS.join(', ')}`,
    env: {
      name: 'VLLM_LOGGING_LEVEL',
      meaning: 'Log level (DEBUG, INFO, WARNING, ERROR, CRITICAL) when no --uvicorn-log-level / --log-level is given',
      read: (v) => {
        const level = LOGGING_LEVELS[v.trim().toUpperCase()];
        if (!level) throw new Error(`VLLM_LOGGING_LEVEL must be one of ${Object.keys(LOGGING_LEVELS).join(', ')}, got '${v}'`);
        return level;
      },
    },
  }),
  disableUvicornAccessLog: observabilityFlag<boolean>({
    default: false,
    cli: [{ flags: '--disable-uvicorn-access-log', description: 'No access log line per request' }],
  }),
  enableLogRequests: observabilityFlag<boolean>({
    default: false,
    cli: [
      { flags: '--enable-log-requests', description: 'Log every request (id, route, body)' },
      { flags: '--disable-log-requests', negates: true, description: 'Do not log requests (vLLM\'s deprecated opposite of --enable-log-requests)', listedAfter: '--long-prefill-token-threshold <tokens>' },
    ],
  }),
  /** --runner: generate, pooling, or auto (from config.json's architectures). */
  runner: modelFlag<RunnerFlag>({
    default: 'auto',
    cli: [{ flags: '--runner <runner>', description: "'generate' or 'pooling' (embeddings, classification, scores); 'auto' decides from config.json's architectures", choices: ['auto', 'generate', 'pooling'], defaultText: 'auto' }],
    valid: (v) => ['auto', 'generate', 'pooling'].includes(v),
    invalid: "--runner must be 'auto', 'generate' or 'pooling'",
  }),
  /** --convert: serve a generative model as an embedder / classifier. */
  convert: modelFlag<ConvertFlag>({
    default: 'auto',
    cli: [{ flags: '--convert <convert>', description: "Serve a generative model for pooling: 'embed' (an embedder) or 'classify' (its score head); 'auto' from the architecture; 'reward' is refused", choices: ['auto', 'none', 'embed', 'classify', 'reward'], defaultText: 'auto' }],
    valid: (v) => ['auto', 'none', 'embed', 'classify', 'reward'].includes(v),
    invalid: "--convert must be 'auto', 'none', 'embed', 'classify' or 'reward'",
  }),
  /** --pooler-config (JSON). */
  poolerConfig: modelFlag<PoolerConfigFlag | null>({
    default: null,
    cli: [
      { flags: '--pooler-config <json>', description: 'Pooling settings as JSON: pooling_type (CLS, MEAN, LAST), normalize, dimensions, enable_chunked_processing (MEAN only: longer inputs are embedded in max_model_len chunks and averaged), max_embed_len, use_activation', parse: parsePoolerConfig, defaultText: "the model's" },
      { flags: '--override-pooler-config <json>', description: 'Deprecated spelling of --pooler-config (as in vLLM)', parse: parsePoolerConfig },
    ],
  }),
  /** Deprecated --task; mapped onto runner / convert (vLLM's mapping) by resolveServerConfig. */
  task: modelFlag<TaskFlag | null>({
    default: null,
    cli: [{ flags: '--task <task>', description: 'Deprecated (as in vLLM): generate = --runner generate; embed, classify, score, reward = --runner pooling with that --convert', choices: TASKS }],
    valid: (v) => v === null || (TASKS as readonly string[]).includes(v),
    invalid: `--task must be one of ${TASKS.join(', ')}`,
  }),
  loadFormat: loadFlag<'auto' | 'dummy'>({
    default: 'auto',
    cli: [{ flags: '--load-format <format>', description: "'auto' (or safetensors / gguf: the format is read from the path) reads the weights; 'dummy' uses random weights of the model's shape; PyTorch and other formats are refused", parse: parseLoadFormat, defaultText: 'auto' }],
    valid: (v) => ['auto', 'dummy'].includes(v),
    invalid: "--load-format must be 'auto' or 'dummy'",
  }),
  device: deviceFlag<'cpu' | 'cuda'>({
    default: 'cpu',
    cli: [{ flags: '--device <device>', description: "'cpu' or 'cuda' (onnxruntime execution provider)", choices: ['cpu', 'cuda'], defaultText: 'cpu' }],
    valid: (v) => ['cpu', 'cuda'].includes(v),
    invalid: "--device must be 'cpu' or 'cuda'",
  }),
  guidedDecodingDisableAnyWhitespace: structuredOutputsFlag<boolean>({
    default: false,
    cli: [{ flags: '--guided-decoding-disable-any-whitespace', description: 'Deprecated spelling of --structured-outputs-config \'{"disable_any_whitespace": true}\'' }],
  }),
  guidedDecodingDisableAdditionalProperties: structuredOutputsFlag<boolean>({
    default: false,
    cli: [{ flags: '--guided-decoding-disable-additional-properties', description: 'Deprecated spelling of --structured-outputs-config \'{"disable_additional_properties": true}\'' }],
  }),
  /** --structured-outputs-config (with the deprecated --guided-decoding-disable-* switches folded in). */
  structuredOutputsConfig: structuredOutputsFlag<StructuredOutputsConfig>({
    default: DEFAULT_STRUCTURED_OUTPUTS_CONFIG,
    cli: [{ flags: '--structured-outputs-config <json>', description: 'Structured outputs as JSON: backend (xgrammar or auto), disable_any_whitespace, disable_additional_properties, disable_fallback, max_whitespace (most whitespace characters in a row between JSON tokens, default 1; null: no bound)', parse: parseStructuredOutputsConfig, defaultText: '{"backend": "auto"}' }],
  }),
  /** --structured-outputs-limits: bounds on a constraint and its compile budget. */
  structuredOutputsLimits: structuredOutputsFlag<StructuredOutputsLimits>({
    default: DEFAULT_STRUCTURED_OUTPUTS_LIMITS,
    cli: [{ flags: '--structured-outputs-limits <json>', description: '(ortllm) Bounds on one structured-output constraint and its compile, as JSON: max_source_bytes, max_nesting_depth, max_ref_depth, max_alternatives, max_pattern_length, max_tools (400 over them), compile_timeout_s, compile_memory_mb, compile_workers (see docs/structured-outputs-limits.md)', parse: parseStructuredOutputsLimits, defaultText: 'max_source_bytes 262144, max_nesting_depth 32, max_ref_depth 32, max_alternatives 2048, max_pattern_length 4096, max_tools 512, compile_timeout_s 10, compile_memory_mb 512, compile_workers cores/4 (1 to 4)' }],
    valid: (v) => Object.values(v).every((n) => typeof n === 'number' && n > 0),
    invalid: '--structured-outputs-limits values must be positive numbers',
  }),
  disableFastapiDocs: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--disable-fastapi-docs', description: 'Do not serve /docs and /openapi.json' }],
  }),
  /** ortllm: largest accepted request body in bytes (bigger -> 413). */
  maxRequestBodyBytes: frontendFlag<number>({
    default: 32 * 2 ** 20,
    cli: [{ flags: '--max-request-body-size <size>', description: '(ortllm) Largest request body; bigger gets 413. Accepts 32MiB', parse: parseByteSize, defaultText: '32MiB' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-request-body-size must be a positive size',
  }),
  /** ortllm: request-body shape limits, checked as the body arrives (400 past them). */
  maxJsonDepth: frontendFlag<number>({
    default: 128,
    cli: [{ flags: '--max-json-depth <n>', description: '(ortllm) Deepest nesting of objects/arrays in a JSON body; deeper gets 400 before parsing', parse: positiveInt, defaultText: '128' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-json-depth must be a positive integer',
  }),
  maxJsonObjectKeys: frontendFlag<number>({
    default: 10_000,
    cli: [{ flags: '--max-json-object-keys <n>', description: '(ortllm) Most keys in one JSON object of a body; more gets 400 before parsing', parse: positiveInt, defaultText: '10000' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-json-object-keys must be a positive integer',
  }),
  maxJsonArrayLength: frontendFlag<number>({
    default: 1_048_576,
    cli: [{ flags: '--max-json-array-length <n>', description: '(ortllm) Most items in one JSON array of a body; more gets 400 before parsing', parse: positiveInt, defaultText: '1048576' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-json-array-length must be a positive integer',
  }),
  maxJsonStringLength: frontendFlag<number>({
    default: 8 * 2 ** 20,
    cli: [{ flags: '--max-json-string-length <chars>', description: '(ortllm) Longest JSON string of a body, in characters as sent; longer gets 400 before parsing', parse: parseHumanInt, defaultText: '8388608' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-json-string-length must be a positive integer',
  }),
  /** ortllm: seconds a client gets to send a whole request (408 after); 0 = no limit. */
  bodyReadTimeoutSeconds: frontendFlag<number>({
    default: 60,
    cli: [{ flags: '--body-read-timeout <seconds>', description: '(ortllm) Seconds a client gets to send a whole request; slower gets 408 (0 = no limit)', parse: parseNonNegative, defaultText: '60' }],
    valid: (v) => v >= 0,
    invalid: '--body-read-timeout must be >= 0',
  }),
  /** Most sequences (waiting + running; n counts n) the engine holds; more get 503. null = no limit. */
  maxNumQueuedReqs: schedulerFlag<number | null>({
    default: 4096,
    cli: [{ flags: '--max-num-queued-reqs <n>', description: 'Most sequences the engine holds (waiting + running, n counts n); more get 503 with Retry-After', parse: positiveInt, defaultText: '4096 (vLLM: no limit)' }],
    valid: (v) => v === null || (Number.isInteger(v) && v > 0),
    invalid: '--max-num-queued-reqs must be a positive integer',
  }),
  /** ortllm: seconds a streaming client may read nothing before its request is aborted; 0 = never. */
  streamStallTimeoutSeconds: frontendFlag<number>({
    default: 60,
    cli: [{ flags: '--stream-stall-timeout <seconds>', description: "(ortllm) Seconds a streaming client may read nothing (its request paused) before it is aborted (0 = never)", parse: parseNonNegative, defaultText: '60' }],
    valid: (v) => v >= 0,
    invalid: '--stream-stall-timeout must be >= 0',
  }),
  /** Tokenizer/chat-template worker threads for large inputs; 0 = all on the HTTP thread. */
  tokenizerPoolSize: frontendFlag<number>({
    default: defaultTokenizerPoolSize(),
    cli: [{ flags: '--tokenizer-pool-size <n>', description: 'Worker threads that tokenize and render large inputs off the HTTP thread (0 = none)', parse: nonNegativeInt, defaultText: '2, 4 at most: a quarter of the cores (vLLM: 0)' }],
    valid: (v) => Number.isInteger(v) && v >= 0,
    invalid: '--tokenizer-pool-size must be an integer >= 0',
  }),
  /** Largest audio upload in MiB (vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB). */
  maxAudioClipFilesizeMb: frontendFlag<number>({
    default: DEFAULT_MAX_AUDIO_CLIP_FILESIZE_MB,
    cli: [{ flags: '--max-audio-clip-filesize-mb <mb>', description: "(ortllm) Largest audio file /v1/audio/* accept, in MiB (vLLM's env VLLM_MAX_AUDIO_CLIP_FILESIZE_MB, used when absent)", parse: parsePositiveNumber, defaultText: '25' }],
    valid: (v) => Number.isFinite(v) && v > 0,
    invalid: '--max-audio-clip-filesize-mb (or VLLM_MAX_AUDIO_CLIP_FILESIZE_MB) must be a positive number of MiB',
    env: {
      name: 'VLLM_MAX_AUDIO_CLIP_FILESIZE_MB',
      meaning: 'Largest audio upload of /v1/audio/* in MiB when no --max-audio-clip-filesize-mb is given (default 25)',
      read: (v) => positiveNumberEnv('VLLM_MAX_AUDIO_CLIP_FILESIZE_MB', v),
    },
  }),
  /** Longest recording /v1/audio/* accept, in seconds (bounds each request's decoded memory). */
  maxAudioDurationSeconds: frontendFlag<number>({
    default: DEFAULT_MAX_AUDIO_DURATION_SECONDS,
    cli: [{ flags: '--max-audio-duration-s <seconds>', description: '(ortllm) Longest recording /v1/audio/* accept; longer ones get 400, from the header when it declares the length, else as soon as decoding passes it', parse: parsePositiveNumber, defaultText: '7200' }],
    valid: (v) => Number.isFinite(v) && v > 0,
    invalid: '--max-audio-duration-s must be a positive number of seconds',
  }),
  /** --allowed-local-media-path: file:// media URLs may name files under this directory; null = none. */
  allowedLocalMediaPath: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--allowed-local-media-path <path>', description: 'file:// image URLs may read files inside this directory (symlinks resolved; outside it is a 400)', defaultText: 'none (file:// refused)' }],
    valid: (v) => v === null || isDirectory(v),
    invalid: (v) => `Invalid \`--allowed-local-media-path\`: The path ${v} does not exist or is not a directory.`,
  }),
  /** --allowed-media-domains: the hosts http(s) media URLs (and their redirects) may name. */
  allowedMediaDomains: frontendFlag<string[]>({
    default: [],
    cli: [{ flags: '--allowed-media-domains <domains...>', description: 'Hosts http(s) image URLs may be fetched from, every redirect hop included (ortllm: none by default, so no URL is fetched; vLLM: any)', defaultText: 'none' }],
    valid: (v) => v.every((d) => d.length > 0),
    invalid: '--allowed-media-domains must not be empty',
  }),
  /** --limit-mm-per-prompt: items of each modality one prompt may carry (999 each when absent, as vLLM). */
  limitMmPerPrompt: frontendFlag<MmLimits>({
    default: {},
    cli: [{ flags: '--limit-mm-per-prompt <json>', description: 'Most items of each modality in one prompt, e.g. {"image": 2} or {"image": {"count": 2, "width": 512, "height": 512}}', parse: parseLimitMmPerPrompt, defaultText: '999 per modality' }],
  }),
  /** --media-io-kwargs: keyword arguments of each modality's loader; requests' media_io_kwargs go over them. */
  mediaIoKwargs: frontendFlag<MediaIoKwargs>({
    default: {},
    cli: [{ flags: '--media-io-kwargs <json>', description: 'Image loading options keyed by modality: {"image": {"rgba_background_color": [r, g, b]}} (transparent pixels of RGBA images are laid on it; white by default); a request\'s media_io_kwargs goes over it', parse: parseMediaIoKwargs, defaultText: 'none' }],
  }),
  /** --mm-processor-kwargs: overrides of the model's image processor; requests' mm_processor_kwargs go over them. */
  mmProcessorKwargs: frontendFlag<Record<string, unknown> | null>({
    default: null,
    cli: [{ flags: '--mm-processor-kwargs <json>', description: 'JSON object of overrides for the model\'s multimodal processor (e.g. {"max_pixels": 1003520}); a request\'s mm_processor_kwargs goes over it', parse: parseJsonObject }],
  }),
  /** Largest image (encoded bytes) a data URL, file or download may hold. */
  maxImageFilesizeMb: frontendFlag<number>({
    default: DEFAULT_MAX_IMAGE_FILESIZE_MB,
    cli: [{ flags: '--max-image-filesize-mb <mb>', description: '(ortllm) Largest encoded image (data URL, file or download) in MiB; larger is a 400', parse: parsePositiveNumber, defaultText: String(DEFAULT_MAX_IMAGE_FILESIZE_MB) }],
    valid: (v) => Number.isFinite(v) && v > 0,
    invalid: '--max-image-filesize-mb must be a positive number of MiB',
  }),
  /** Most pixels a decoded image may have: a decompression bomb is a 400, not an out-of-memory. */
  maxImagePixels: frontendFlag<number>({
    default: DEFAULT_MAX_IMAGE_PIXELS,
    cli: [{ flags: '--max-image-pixels <n>', description: "(ortllm) Most pixels (width x height) an image may declare; more is a 400 before decoding (PIL's MAX_IMAGE_PIXELS)", parse: positiveInt, defaultText: String(DEFAULT_MAX_IMAGE_PIXELS) }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--max-image-pixels must be a positive integer',
  }),
  /** VLLM_IMAGE_FETCH_TIMEOUT: seconds an http(s) image download may take. */
  imageFetchTimeoutSeconds: frontendFlag<number>({
    default: 5,
    valid: (v) => v > 0,
    invalid: 'VLLM_IMAGE_FETCH_TIMEOUT must be > 0',
    env: {
      name: 'VLLM_IMAGE_FETCH_TIMEOUT',
      meaning: 'Seconds an http(s) image download may take, redirects included (default 5)',
      read: (v) => positiveNumberEnv('VLLM_IMAGE_FETCH_TIMEOUT', v),
    },
  }),
  /** VLLM_MEDIA_URL_ALLOW_REDIRECTS: whether media downloads follow redirects (each hop's host checked). */
  mediaUrlAllowRedirects: frontendFlag<boolean>({
    default: true,
    env: {
      name: 'VLLM_MEDIA_URL_ALLOW_REDIRECTS',
      meaning: '0 refuses redirects of media downloads; otherwise they are followed when each hop\'s host is in --allowed-media-domains (default 1)',
      read: (v) => {
        // vLLM reads it as bool(int(value)).
        if (!/^\s*[+-]?\d+\s*$/.test(v)) throw new Error(`VLLM_MEDIA_URL_ALLOW_REDIRECTS must be 0 or 1, got '${v}'`);
        return Number(v) !== 0;
      },
    },
  }),
  /** ortllm: where stored responses live: 'memory' (in-process LRU) or redis://host:port/db. */
  responsesStore: responsesFlag<string>({
    default: 'memory',
    cli: [{ flags: '--responses-store <store>', description: "(ortllm) Where stored responses (/v1/responses) live: 'memory' (in-process LRU) or redis://host:port/db (rediss:// for TLS), shared by replicas", defaultText: 'memory' }],
    valid: (v) => v === 'memory' || /^rediss?:\/\/./i.test(v),
    invalid: "--responses-store must be 'memory' or a redis:// (rediss://) URL",
  }),
  /** ortllm: seconds a stored response is kept after its last write (0 = until evicted). */
  // OpenAI keeps stored responses for 30 days.
  responsesStoreTtlSeconds: responsesFlag<number>({
    default: 30 * 24 * 3600,
    cli: [{ flags: '--responses-store-ttl <seconds>', description: '(ortllm) Seconds a stored response is kept after its last write (0 = until evicted)', parse: parseInteger, defaultText: '2592000 (30 days)' }],
    valid: (v) => Number.isFinite(v) && v >= 0,
    invalid: '--responses-store-ttl must be >= 0',
  }),
  /** ortllm: byte budget of the in-process responses store (least recently used go first). */
  responsesStoreMaxBytes: responsesFlag<number>({
    default: 256 * 2 ** 20,
    cli: [{ flags: '--responses-store-max-size <size>', description: '(ortllm) Byte budget of the in-process responses store; least recently used go first. Accepts 256MiB', parse: parseByteSize, defaultText: '256MiB' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--responses-store-max-size must be a positive size',
  }),
  /** ortllm: seconds each Redis store call may take before it fails as unavailable (503). */
  responsesStoreTimeoutSeconds: responsesFlag<number>({
    default: 2,
    cli: [{ flags: '--responses-store-timeout <seconds>', description: '(ortllm) Seconds each call to a Redis responses store may take; slower or unreachable gets 503 with Retry-After', parse: parsePositiveNumber, defaultText: '2' }],
    valid: (v) => Number.isFinite(v) && v > 0,
    invalid: '--responses-store-timeout must be > 0',
  }),
  /** ortllm: most responses a previous_response_id chain links (the new one included). */
  responsesChainMaxDepth: responsesFlag<number>({
    default: 100,
    cli: [{ flags: '--responses-chain-max-depth <n>', description: '(ortllm) Most responses one previous_response_id chain may link; a longer one gets 400', parse: positiveInt, defaultText: '100' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--responses-chain-max-depth must be a positive integer',
  }),
  /** ortllm: largest stored conversation (JSON bytes) a previous_response_id continues. */
  responsesChainMaxBytes: responsesFlag<number>({
    default: 4 * 2 ** 20,
    cli: [{ flags: '--responses-chain-max-size <size>', description: '(ortllm) Largest stored conversation (JSON) a previous_response_id may continue; larger gets 400. Accepts 4MiB', parse: parseByteSize, defaultText: '4MiB' }],
    valid: (v) => Number.isInteger(v) && v > 0,
    invalid: '--responses-chain-max-size must be a positive size',
  }),
  /** ortllm: request fields an endpoint does not declare are logged as a warning (vLLM), refused with 400, or logged at debug level. */
  unknownRequestFields: frontendFlag<UnknownFieldsAction>({
    default: 'warn',
    cli: [{ flags: '--unknown-request-fields <action>', description: "(ortllm) Request fields an endpoint does not know: 'warn' logs their names once per request and ignores them (as vLLM), 'reject' answers 400, 'ignore' logs at debug level", choices: UNKNOWN_FIELDS_ACTIONS, defaultText: 'warn' }],
    valid: (v) => UNKNOWN_FIELDS_ACTIONS.includes(v),
    invalid: `--unknown-request-fields must be one of ${UNKNOWN_FIELDS_ACTIONS.join(', ')}`,
  }),
  /** ortllm: seconds in-flight requests get to finish after SIGTERM/SIGINT. */
  shutdownTimeoutSeconds: frontendFlag<number>({
    default: 30,
    cli: [{ flags: '--shutdown-timeout <seconds>', description: '(ortllm) Seconds in-flight requests get to finish after SIGTERM/SIGINT (new requests get 503 meanwhile)', parse: parseInteger, defaultText: '30' }],
    valid: (v) => v >= 0,
    invalid: '--shutdown-timeout must be >= 0',
  }),
  dtype: modelFlag<ModelDtype>({
    default: 'auto',
    cli: [{ flags: '--dtype <dtype>', description: "Weight and compute type of the graph: auto/float/float32 = float32; half/float16 = float16 weights and activations (half the weight memory; on CPU slower at large batches); bfloat16 = BERT-style pooling models (BERT, XLM-RoBERTa: embed/classify/score) run their encoder linears in the addon's bfloat16 GEMM (weights rounded to bfloat16 at load, float32 sums) on CPUs with AVX512-BF16 (1.2-2x the embeddings/s of float32); refused at startup elsewhere. float16 applies to decoder generation graphs; pooling graphs and Whisper's transcription graphs refuse it at startup. An ONNX export keeps its own type", parse: parseDtype, defaultText: 'auto' }],
    valid: (v) => ['auto', 'float32', 'float16', 'bfloat16'].includes(v),
    invalid: "--dtype must be 'auto', 'float32', 'float16' or 'bfloat16'",
  }),
  /** Seed of the process-wide sampler (requests without a `seed`). */
  seed: modelFlag<number>({
    default: 0,
    cli: [{ flags: '--seed <seed>', description: 'Seed of the sampler for requests without their own `seed` (a fixed seed makes a whole run reproducible)', parse: parseInteger, defaultText: '0' }],
    valid: (v) => Number.isInteger(v),
    invalid: '--seed must be an integer',
  }),
  /** Fraction of memory (device memory with cuda, RAM on cpu) the KV budget is derived from; null = not given. */
  gpuMemoryUtilization: cacheFlag<number | null>({
    default: null,
    cli: [{ flags: '--gpu-memory-utilization <fraction>', description: 'KV cache budget = this fraction of memory minus what the model already uses: device memory with --device cuda (from nvidia-smi), RAM on cpu', parse: parseFraction, defaultText: '20% of free memory (not given)' }],
    valid: (v) => v === null || (v > 0 && v <= 1),
    invalid: '--gpu-memory-utilization must be in (0, 1]',
  }),
  kvCacheDtype: cacheFlag<KvCacheDtypeFlag>({
    default: 'auto',
    cli: [{ flags: '--kv-cache-dtype <dtype>', description: "KV cache storage: auto = the model's data type (config.json dtype/torch_dtype; float16 for GGUF, as llama.cpp's f16 cache), float32 where the native attention addon is missing (logged); float16 or bfloat16 halve the cache (need the addon); fp8 (= fp8_e4m3) or fp8_e5m2 quarter it (8-bit floats at scale 1.0, saturating as vLLM's; need the addon); float32 pins it; fp8_inc and fp8_ds_mla are refused", parse: parseKvCacheDtype, defaultText: 'auto' }],
  }),
  numGpuBlocksOverride: cacheFlag<number | null>({
    default: null,
    cli: [{ flags: '--num-gpu-blocks-override <n>', description: 'Number of KV cache blocks, overriding the memory-based size', parse: positiveInt }],
    valid: (v) => v === null || (Number.isInteger(v) && v > 0),
    invalid: '--num-gpu-blocks-override must be a positive integer',
  }),
  /** Tokenizer (and its chat template) from another HF directory or GGUF file; null = the model's. */
  tokenizer: modelFlag<string | null>({
    default: null,
    cli: [{ flags: '--tokenizer <path>', description: 'Take the tokenizer and its chat template from this HF directory or GGUF file', defaultText: "the model's" }],
  }),
  tokenizerMode: modelFlag<TokenizerMode>({
    default: 'auto',
    cli: [{ flags: '--tokenizer-mode <mode>', description: 'auto / hf: the tokenizer.json (or GGUF) tokenizer; slow: the same (one implementation); mistral / custom are refused', parse: parseTokenizerMode, defaultText: 'auto' }],
  }),
  maxNumPartialPrefills: schedulerFlag<number>({
    default: 1,
    cli: [{ flags: '--max-num-partial-prefills <n>', description: 'Most prompts left partially prefilled by one step', parse: positiveInt, defaultText: '1' }],
    valid: (v) => Number.isInteger(v) && v >= 1,
    invalid: '--max-num-partial-prefills must be an integer >= 1',
  }),
  maxLongPartialPrefills: schedulerFlag<number>({
    default: 1,
    cli: [{ flags: '--max-long-partial-prefills <n>', description: 'Most prompts longer than --long-prefill-token-threshold left partially prefilled by one step (shorter ones may overtake them)', parse: positiveInt, defaultText: '1' }],
    valid: (v) => Number.isInteger(v) && v >= 1,
    invalid: '--max-long-partial-prefills must be an integer >= 1',
  }),
  /** 0 = no limit (vLLM derives 4% of max_model_len when max_num_partial_prefills > 1). */
  longPrefillTokenThreshold: schedulerFlag<number>({
    default: 0,
    cli: [{ flags: '--long-prefill-token-threshold <tokens>', description: 'Prompts longer than this are long; no prefill chunk is larger (0 = off; 4% of --max-model-len when --max-num-partial-prefills > 1)', parse: nonNegativeInt, defaultText: '0' }],
    valid: (v) => Number.isInteger(v) && v >= 0,
    invalid: '--long-prefill-token-threshold must be an integer >= 0',
  }),
  /** No periodic throughput log line. */
  disableLogStats: observabilityFlag<boolean>({
    default: false,
    cli: [{ flags: '--disable-log-stats', description: 'No periodic throughput line (every VLLM_LOG_STATS_INTERVAL seconds while busy)' }],
  }),
  /** GET /load counts in-flight generation requests. */
  enableServerLoadTracking: observabilityFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-server-load-tracking', description: 'GET /load reports the generation requests in flight' }],
  }),
  /** POST /sleep may free the engine's memory (with VLLM_SERVER_DEV_MODE=1). */
  enableSleepMode: frontendFlag<boolean>({
    default: false,
    cli: [{ flags: '--enable-sleep-mode', description: 'Allow POST /sleep (with VLLM_SERVER_DEV_MODE=1) to free the KV cache and the weights' }],
  }),
  /** Longest request body logged with --enable-log-requests (characters); null = all. */
  maxLogLen: observabilityFlag<number | null>({
    default: null,
    cli: [{ flags: '--max-log-len <n>', description: 'Longest request body (characters) --enable-log-requests prints', parse: nonNegativeInt, defaultText: 'unlimited' }],
    valid: (v) => v === null || (Number.isInteger(v) && v >= 0),
    invalid: '--max-log-len must be an integer >= 0',
  }),
  /** Generation defaults that override (or add to) generation_config.json. */
  overrideGenerationConfig: modelFlag<Record<string, unknown> | null>({
    default: null,
    cli: [{ flags: '--override-generation-config <json>', description: 'JSON object of sampling defaults (temperature, top_p, top_k, min_p, repetition_penalty, max_new_tokens) over generation_config.json', parse: parseJsonObject }],
    valid: (v) => v === null || (typeof v === 'object' && !Array.isArray(v)),
    invalid: '--override-generation-config must be a JSON object',
  }),
  /** Chat template variables every request gets unless its chat_template_kwargs sets them. */
  defaultChatTemplateKwargs: frontendFlag<Record<string, unknown> | null>({
    default: null,
    cli: [{ flags: '--default-chat-template-kwargs <json>', description: 'JSON object of chat template variables (e.g. {"enable_thinking": false}) under each request\'s chat_template_kwargs', parse: parseJsonObject }],
  }),
  /** config.json keys over the model's config (rope_theta, rope_scaling, max_position_embeddings). */
  hfOverrides: modelFlag<Record<string, unknown> | null>({
    default: null,
    cli: [{ flags: '--hf-overrides <json>', description: 'JSON object of config.json keys over the model\'s config: rope_theta, rope_scaling, max_position_embeddings; is_matryoshka, matryoshka_dimensions (allow embeddings dimensions); others are refused', parse: parseJsonObject }],
  }),
  /** vLLM's older spellings of hf_overrides' rope keys (hfOverrides wins). */
  ropeTheta: modelFlag<number | null>({
    default: null,
    cli: [{ flags: '--rope-theta <theta>', description: 'Same as --hf-overrides \'{"rope_theta": THETA}\'', parse: parsePositiveNumber }],
  }),
  ropeScaling: modelFlag<Record<string, unknown> | null>({
    default: null,
    cli: [{ flags: '--rope-scaling <json>', description: 'Same as --hf-overrides \'{"rope_scaling": JSON}\' (linear, dynamic, yarn, llama3)', parse: parseJsonObject }],
  }),
  /** Unix domain socket to listen on instead of host:port. */
  uds: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--uds <path>', description: 'Listen on this Unix domain socket instead of host:port' }],
  }),
  /** Paths left out of the access log. */
  disableAccessLogForEndpoints: observabilityFlag<string[]>({
    default: [],
    cli: [{ flags: '--disable-access-log-for-endpoints <paths>', description: 'Comma-separated paths left out of the access log (e.g. /health,/metrics)', parse: parseStringList }],
  }),
  /** Python ssl.CERT_NONE (0), CERT_OPTIONAL (1), CERT_REQUIRED (2): client certificates. */
  sslCertReqs: frontendFlag<number>({
    default: 0,
    cli: [{ flags: '--ssl-cert-reqs <n>', description: 'Client certificates: 0 none, 1 optional, 2 required (verified against --ssl-ca-certs)', parse: parseInteger, defaultText: '0' }],
    valid: (v) => [0, 1, 2].includes(v),
    invalid: '--ssl-cert-reqs must be 0 (none), 1 (optional) or 2 (required)',
  }),
  sslCiphers: frontendFlag<string | null>({
    default: null,
    cli: [{ flags: '--ssl-ciphers <list>', description: 'OpenSSL cipher list for TLS 1.2 and below' }],
  }),
  /** Threads of the forward pass (intra-op and attention); null = the engine's default (VLLM_CPU_OMP_THREADS_BIND). */
  cpuThreads: deviceFlag<number | null>({
    default: null,
    env: {
      name: 'VLLM_CPU_OMP_THREADS_BIND',
      meaning: 'CPU cores of the forward pass, e.g. 0-3 or 0,2,4 (the first | group): its core count sets the thread count (threads are not pinned; 2 is CPU 2 alone, one thread); auto or nobind = the default (every core)',
      read: (v) => {
        const group = v.split('|')[0].trim();
        return group === 'auto' || group === 'nobind' || group === '' ? undefined : countCpuList(group);
      },
    },
  }),
  /** Seconds between throughput log lines (VLLM_LOG_STATS_INTERVAL). */
  logStatsIntervalSeconds: observabilityFlag<number>({
    default: 10,
    valid: (v) => v > 0,
    invalid: 'VLLM_LOG_STATS_INTERVAL must be > 0',
    env: {
      name: 'VLLM_LOG_STATS_INTERVAL',
      meaning: 'Seconds between throughput log lines (default 10; --disable-log-stats turns them off)',
      read: (v) => positiveNumberEnv('VLLM_LOG_STATS_INTERVAL', v),
    },
  }),
  /** VLLM_SERVER_DEV_MODE=1: /reset_prefix_cache, /kv_cache/blocks, /server_info, /sleep, /wake_up, /is_sleeping, /collective_rpc. */
  devMode: frontendFlag<boolean>({
    default: false,
    env: {
      name: 'VLLM_SERVER_DEV_MODE',
      meaning: '1 registers /reset_prefix_cache, /kv_cache/blocks, /server_info, /sleep, /wake_up, /is_sleeping, /collective_rpc',
      read: (v) => truthy(v),
    },
  }),
  /** VLLM_ALLOW_RUNTIME_LORA_UPDATING: registers POST /v1/load_lora_adapter and /v1/unload_lora_adapter. */
  allowRuntimeLoraUpdating: frontendFlag<boolean>({
    default: false,
    env: {
      name: 'VLLM_ALLOW_RUNTIME_LORA_UPDATING',
      meaning: '1 or true registers POST /v1/load_lora_adapter and /v1/unload_lora_adapter (with --enable-lora)',
      read: (v) => truthy(v),
    },
  }),
  /** VLLM_LORA_RESOLVER_CACHE_DIR: vLLM's filesystem resolver looks unknown adapter names up here. */
  loraResolverCacheDir: frontendFlag<string | null>({
    default: null,
    env: {
      name: 'VLLM_LORA_RESOLVER_CACHE_DIR',
      meaning: 'With VLLM_ALLOW_RUNTIME_LORA_UPDATING: a `model` no one loaded is looked up as a PEFT adapter in this directory\'s subdirectory of that name and loaded on first use',
      read: (v) => v,
    },
  }),
  /** VLLM_PLUGINS: the vLLM plugins to load (null: all of them); lora_filesystem_resolver is the one that exists here. */
  vllmPlugins: frontendFlag<string[] | null>({
    default: null,
    env: {
      name: 'VLLM_PLUGINS',
      meaning: 'When set, the filesystem LoRA resolver is used only if it lists lora_filesystem_resolver (other plugins are Python and are not loaded)',
      read: (v) => parseStringList(v),
    },
  }),
  /** VLLM_HTTP_TIMEOUT_KEEP_ALIVE: idle keep-alive seconds; null = Fastify's default. */
  keepAliveTimeoutSeconds: frontendFlag<number | null>({
    default: null,
    env: {
      name: 'VLLM_HTTP_TIMEOUT_KEEP_ALIVE',
      meaning: 'Seconds an idle keep-alive connection stays open',
      read: (v) => positiveNumberEnv('VLLM_HTTP_TIMEOUT_KEEP_ALIVE', v),
    },
  }),
};
