// The `ortllm serve` flags (vLLM's names), each mapped to a ServerConfig key. The CLI builds its
// commander options from this table; `--help` prints the descriptions with the defaults.

import { isKvStorageDtype, type KvCacheDtypeFlag } from '../model/runner/kv-dtype';
import { parsePoolerConfig } from './pooler-config-flag';
import { LOG_LEVELS, ServerConfig, TASKS, UNKNOWN_FIELDS_ACTIONS, type ModelDtype } from './server-config';
import { parseByteSize, parseFraction, parseHumanInt, parseInteger, parseJsonObject, parsePositiveNumber, parseStringList } from './units';
import { parseStructuredOutputsConfig } from './structured-outputs-config';
import { parseStructuredOutputsLimits } from './structured-outputs-limits';

export interface FlagSpec {
  /** commander syntax, e.g. '--port <port>' or '--tokens-only'. */
  flags: string;
  key: keyof ServerConfig;
  description: string;
  /** Turns the text into the config value; throws with a readable message. */
  parse?: (text: string) => unknown;
  choices?: readonly string[];
  /** Shown in --help. */
  defaultText?: string;
  /** A boolean flag that sets its key to false (e.g. --disable-log-requests → enableLogRequests). */
  negates?: boolean;
}

const positiveInt = (text: string): number => {
  const n = parseInteger(text);
  if (n <= 0) throw new Error(`'${text}' must be a positive integer`);
  return n;
};

const parseNonNegative = (text: string): number => {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) throw new Error(`'${text}' must be a number >= 0`);
  return n;
};

/**
 * vLLM's --dtype choices. bfloat16 is taken here; the runner refuses it at startup where it has no
 * bfloat16 kernels (registry.ts: BFLOAT16_SCOPE).
 */
function parseDtype(text: string): ModelDtype {
  const aliases: Record<string, ModelDtype> = { auto: 'auto', float: 'float32', float32: 'float32', half: 'float16', float16: 'float16', bfloat16: 'bfloat16' };
  const dtype = aliases[text];
  if (!dtype) throw new Error(`'${text}' is not one of auto, half, float16, bfloat16, float, float32`);
  return dtype;
}

/** vLLM's --tokenizer-mode values; the ones needing another tokenizer implementation are refused. */
function parseTokenizerMode(text: string): 'auto' | 'hf' | 'slow' {
  if (text === 'auto' || text === 'hf' || text === 'slow') return text;
  if (['mistral', 'custom', 'deepseek_v32'].includes(text)) {
    throw new Error(`'${text}' needs vLLM's Python tokenizer (${text === 'mistral' ? 'mistral_common' : 'a plugin'}); ortllm reads tokenizer.json or the GGUF vocabulary: use auto`);
  }
  throw new Error(`'${text}' is not one of auto, hf, slow, mistral, custom, deepseek_v32`);
}

/**
 * vLLM's --kv-cache-dtype values (auto, bfloat16, fp8 = fp8_e4m3, fp8_e5m2), plus float16 and
 * float32 to pin a storage type whatever the model's; fp8_inc (Intel Gaudi) and fp8_ds_mla
 * (DeepSeek MLA's packed layout) are refused with the reason.
 */
function parseKvCacheDtype(text: string): KvCacheDtypeFlag {
  if (text === 'auto' || text === 'fp8' || isKvStorageDtype(text)) return text;
  if (text === 'fp8_inc' || text === 'fp8_ds_mla') {
    throw new Error(
      `'${text}' is not supported: it is ${text === 'fp8_inc' ? "Intel Gaudi's (INC) fp8 cache" : "DeepSeek MLA's packed fp8 layout"}; use fp8 (= fp8_e4m3) or fp8_e5m2 for an 8-bit cache`,
    );
  }
  throw new Error(`'${text}' is not one of auto, bfloat16, float16, float32, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla`);
}

/** vLLM's --load-format values: the ones ortllm reads are auto; the others are refused with the reason. */
function parseLoadFormat(text: string): 'auto' | 'dummy' {
  if (text === 'auto' || text === 'safetensors' || text === 'gguf') return 'auto';
  if (text === 'dummy') return 'dummy';
  throw new Error(`'${text}' is not supported: ortllm reads GGUF files, safetensors and ONNX exports (auto); convert the checkpoint to safetensors or GGUF`);
}

const nonNegativeInt = (text: string): number => {
  const n = parseInteger(text);
  if (n < 0) throw new Error(`'${text}' must be >= 0`);
  return n;
};

export const SERVER_FLAGS: FlagSpec[] = [
  { flags: '--model <model>', key: 'model', description: 'GGUF file or Hugging Face model directory (same as the MODEL argument)', defaultText: 'the built-in dummy model' },
  { flags: '--host <host>', key: 'host', description: 'Interface to listen on', defaultText: 'all interfaces' },
  { flags: '--port <port>', key: 'port', description: 'Port to listen on; 0 picks a free port (the ready line prints it)', parse: parseInteger, defaultText: '8000' },
  { flags: '--api-key <keys...>', key: 'apiKeys', description: 'Require `Authorization: Bearer <key>`; several keys allowed (repeat or list). Env VLLM_API_KEY when absent', defaultText: 'none' },
  { flags: '--served-model-name <names...>', key: 'servedModelNames', description: 'Model names accepted in requests; the first is reported in responses and metrics', defaultText: 'the model path' },
  { flags: '--max-model-len <tokens>', key: 'maxModelLen', description: "Context length (prompt + output); accepts 4096, 32k (1000s), 32K (1024s)", parse: parseHumanInt, defaultText: "the model's" },
  { flags: '--max-num-seqs <n>', key: 'maxNumSeqs', description: 'Most sequences in one batch', parse: positiveInt, defaultText: '128 on cpu, 256 on cuda' },
  { flags: '--max-num-batched-tokens <n>', key: 'maxNumBatchedTokens', description: 'Token budget of one engine step', parse: parseHumanInt, defaultText: '2048' },
  { flags: '--scheduling-policy <policy>', key: 'schedulingPolicy', description: "'fcfs' or 'priority' (request field `priority`, lower first)", choices: ['fcfs', 'priority'], defaultText: 'fcfs' },
  { flags: '--kv-cache-memory <size>', key: 'kvCacheMemoryBytes', description: 'KV cache budget in bytes; accepts 512MiB, 2GiB', parse: parseByteSize, defaultText: 'a share of free memory' },
  { flags: '--kv-cache-memory-bytes <size>', key: 'kvCacheMemoryBytes', description: 'Same as --kv-cache-memory (vLLM spelling)', parse: parseByteSize },
  { flags: '--block-size <tokens>', key: 'blockSize', description: 'Tokens per KV cache block', parse: positiveInt, defaultText: '16' },
  { flags: '--enable-prefix-caching', key: 'enablePrefixCaching', description: 'Reuse KV blocks of shared prompt prefixes', defaultText: 'on' },
  { flags: '--no-enable-prefix-caching', key: 'enablePrefixCaching', description: 'Turn prefix caching off' },
  { flags: '--generation-config <source>', key: 'generationConfig', description: "'auto' applies the model's generation_config.json defaults, 'vllm' ignores them, or a folder path", defaultText: 'auto' },
  { flags: '--chat-template <template>', key: 'chatTemplate', description: 'Chat template file or inline Jinja string', defaultText: "the model's" },
  { flags: '--trust-request-chat-template', key: 'trustRequestChatTemplate', description: 'Allow a per-request `chat_template` (otherwise 400)' },
  { flags: '--response-role <role>', key: 'responseRole', description: 'Role of generated chat messages', defaultText: 'assistant' },
  { flags: '--chat-template-content-format <format>', key: 'chatTemplateContentFormat', description: "How message content reaches the template: 'string' (parts joined into one string), 'openai' (a list of {type, text} parts), 'auto' (detected from the template)", choices: ['auto', 'string', 'openai'], defaultText: 'auto' },
  { flags: '--enable-auto-tool-choice', key: 'enableAutoToolChoice', description: 'Allow tool_choice "auto": tool calls are parsed out of the model\'s text (needs --tool-call-parser)' },
  { flags: '--tool-call-parser <name>', key: 'toolCallParser', description: 'Tool-call format of the model: hermes, llama3_json (llama4_json), mistral, pythonic, qwen3_coder, or a name a plugin registers' },
  { flags: '--tool-parser-plugin <file>', key: 'toolParserPlugin', description: 'A .js/.cjs/.mjs/.ts file that registers more tool-call parsers (see README)' },
  { flags: '--reasoning-parser <name>', key: 'reasoningParser', description: 'Split the model\'s thinking into `reasoning`: deepseek_r1, qwen3, or a name a plugin registers' },
  { flags: '--reasoning-parser-plugin <file>', key: 'reasoningParserPlugin', description: 'A .js/.cjs/.mjs/.ts file that registers more reasoning parsers (see README)' },
  { flags: '--exclude-tools-when-tool-choice-none', key: 'excludeToolsWhenToolChoiceNone', description: 'With tool_choice "none", leave `tools` out of the prompt (by default the template still renders them)' },
  { flags: '--tokens-only', key: 'tokensOnly', description: 'Only the tokens-in/tokens-out routes (implies --skip-tokenizer-init and --enable-scale-out; adds legacy POST /abort_requests)' },
  { flags: '--enable-scale-out', key: 'enableScaleOut', description: 'Register /inference/v1/generate, /inference/v1/abort_requests, render and derender routes' },
  { flags: '--skip-tokenizer-init', key: 'skipTokenizerInit', description: 'Load no tokenizer (token ids in and out only)' },
  { flags: '--return-tokens-as-token-ids', key: 'returnTokensAsTokenIds', description: 'Show logprob tokens as "token_id:N"' },
  { flags: '--enable-request-id-headers', key: 'enableRequestIdHeaders', description: 'Echo X-Request-Id (or a fresh id) in every response' },
  { flags: '--enable-prompt-tokens-details', key: 'enablePromptTokensDetails', description: 'Add usage.prompt_tokens_details.cached_tokens' },
  { flags: '--enable-force-include-usage', key: 'enableForceIncludeUsage', description: 'Include usage on every response, streaming included' },
  { flags: '--max-logprobs <n>', key: 'maxLogprobs', description: 'Largest `logprobs` / `top_logprobs` a request may ask (-1 = no limit)', parse: parseInteger, defaultText: '20' },
  { flags: '--allowed-origins <list>', key: 'allowedOrigins', description: 'CORS origins, JSON list or comma-separated', parse: parseStringList, defaultText: '["*"]' },
  { flags: '--allowed-methods <list>', key: 'allowedMethods', description: 'CORS methods, JSON list or comma-separated', parse: parseStringList, defaultText: '["*"]' },
  { flags: '--allowed-headers <list>', key: 'allowedHeaders', description: 'CORS headers, JSON list or comma-separated', parse: parseStringList, defaultText: '["*"]' },
  { flags: '--allow-credentials', key: 'allowCredentials', description: 'CORS: allow credentials' },
  { flags: '--root-path <path>', key: 'rootPath', description: 'Path prefix when behind a path-based proxy (requests with or without it are served)', defaultText: 'none' },
  { flags: '--forwarded-allow-ips <list>', key: 'forwardedAllowIps', description: "(uvicorn) Peers (IPs, CIDR ranges or '*') whose X-Forwarded-Proto / X-Forwarded-Host name the server in the served /openapi.json", parse: parseStringList, defaultText: '127.0.0.1' },
  { flags: '--ssl-keyfile <file>', key: 'sslKeyfile', description: 'TLS private key (PEM); serve HTTPS with --ssl-certfile' },
  { flags: '--ssl-certfile <file>', key: 'sslCertfile', description: 'TLS certificate chain (PEM)' },
  { flags: '--ssl-ca-certs <file>', key: 'sslCaCerts', description: 'CA certificates (PEM) to trust' },
  { flags: '--uvicorn-log-level <level>', key: 'logLevel', description: 'Log level', choices: LOG_LEVELS, defaultText: 'info' },
  { flags: '--log-level <level>', key: 'logLevel', description: 'Same as --uvicorn-log-level', choices: LOG_LEVELS },
  { flags: '--disable-uvicorn-access-log', key: 'disableUvicornAccessLog', description: 'No access log line per request' },
  { flags: '--enable-log-requests', key: 'enableLogRequests', description: 'Log every request (id, route, body)' },
  { flags: '--runner <runner>', key: 'runner', description: "'generate' or 'pooling' (embeddings, classification, scores); 'auto' decides from config.json's architectures", choices: ['auto', 'generate', 'pooling'], defaultText: 'auto' },
  { flags: '--convert <convert>', key: 'convert', description: "Serve a generative model for pooling: 'embed' (an embedder) or 'classify' (its score head); 'auto' from the architecture; 'reward' is refused", choices: ['auto', 'none', 'embed', 'classify', 'reward'], defaultText: 'auto' },
  { flags: '--pooler-config <json>', key: 'poolerConfig', description: 'Pooling settings as JSON: pooling_type (CLS, MEAN, LAST), normalize, dimensions, enable_chunked_processing (MEAN only: longer inputs are embedded in max_model_len chunks and averaged), max_embed_len, use_activation', parse: parsePoolerConfig, defaultText: "the model's" },
  { flags: '--override-pooler-config <json>', key: 'poolerConfig', description: 'Deprecated spelling of --pooler-config (as in vLLM)', parse: parsePoolerConfig },
  { flags: '--task <task>', key: 'task', description: 'Deprecated (as in vLLM): generate = --runner generate; embed, classify, score, reward = --runner pooling with that --convert', choices: TASKS },
  { flags: '--load-format <format>', key: 'loadFormat', description: "'auto' (or safetensors / gguf: the format is read from the path) reads the weights; 'dummy' uses random weights of the model's shape; PyTorch and other formats are refused", parse: parseLoadFormat, defaultText: 'auto' },
  { flags: '--device <device>', key: 'device', description: "'cpu' or 'cuda' (onnxruntime execution provider)", choices: ['cpu', 'cuda'], defaultText: 'cpu' },
  {
    flags: '--guided-decoding-disable-any-whitespace',
    key: 'guidedDecodingDisableAnyWhitespace',
    description: 'Deprecated spelling of --structured-outputs-config \'{"disable_any_whitespace": true}\'',
  },
  {
    flags: '--guided-decoding-disable-additional-properties',
    key: 'guidedDecodingDisableAdditionalProperties',
    description: 'Deprecated spelling of --structured-outputs-config \'{"disable_additional_properties": true}\'',
  },
  {
    flags: '--structured-outputs-config <json>',
    key: 'structuredOutputsConfig',
    description:
      'Structured outputs as JSON: backend (xgrammar or auto), disable_any_whitespace, disable_additional_properties, disable_fallback, max_whitespace (most whitespace characters in a row between JSON tokens, default 1; null: no bound)',
    parse: parseStructuredOutputsConfig,
    defaultText: '{"backend": "auto"}',
  },
  {
    flags: '--structured-outputs-limits <json>',
    key: 'structuredOutputsLimits',
    description:
      '(ortllm) Bounds on one structured-output constraint and its compile, as JSON: max_source_bytes, max_nesting_depth, max_ref_depth, max_alternatives, max_pattern_length, max_tools (400 over them), compile_timeout_s, compile_memory_mb, compile_workers (see docs/structured-outputs-limits.md)',
    parse: parseStructuredOutputsLimits,
    defaultText:
      'max_source_bytes 262144, max_nesting_depth 32, max_ref_depth 32, max_alternatives 2048, max_pattern_length 4096, max_tools 512, compile_timeout_s 10, compile_memory_mb 512, compile_workers cores/4 (1 to 4)',
  },
  { flags: '--disable-fastapi-docs', key: 'disableFastapiDocs', description: 'Do not serve /docs and /openapi.json' },
  { flags: '--max-request-body-size <size>', key: 'maxRequestBodyBytes', description: '(ortllm) Largest request body; bigger gets 413. Accepts 32MiB', parse: parseByteSize, defaultText: '32MiB' },
  { flags: '--max-json-depth <n>', key: 'maxJsonDepth', description: '(ortllm) Deepest nesting of objects/arrays in a JSON body; deeper gets 400 before parsing', parse: positiveInt, defaultText: '128' },
  { flags: '--max-json-object-keys <n>', key: 'maxJsonObjectKeys', description: '(ortllm) Most keys in one JSON object of a body; more gets 400 before parsing', parse: positiveInt, defaultText: '10000' },
  { flags: '--max-json-array-length <n>', key: 'maxJsonArrayLength', description: '(ortllm) Most items in one JSON array of a body; more gets 400 before parsing', parse: positiveInt, defaultText: '1048576' },
  { flags: '--max-json-string-length <chars>', key: 'maxJsonStringLength', description: '(ortllm) Longest JSON string of a body, in characters as sent; longer gets 400 before parsing', parse: parseHumanInt, defaultText: '8388608' },
  { flags: '--body-read-timeout <seconds>', key: 'bodyReadTimeoutSeconds', description: '(ortllm) Seconds a client gets to send a whole request; slower gets 408 (0 = no limit)', parse: parseNonNegative, defaultText: '60' },
  { flags: '--max-num-queued-reqs <n>', key: 'maxNumQueuedReqs', description: 'Most sequences the engine holds (waiting + running, n counts n); more get 503 with Retry-After', parse: positiveInt, defaultText: '4096 (vLLM: no limit)' },
  { flags: '--stream-stall-timeout <seconds>', key: 'streamStallTimeoutSeconds', description: "(ortllm) Seconds a streaming client may read nothing (its request paused) before it is aborted (0 = never)", parse: parseNonNegative, defaultText: '60' },
  { flags: '--tokenizer-pool-size <n>', key: 'tokenizerPoolSize', description: 'Worker threads that tokenize and render large inputs off the HTTP thread (0 = none)', parse: nonNegativeInt, defaultText: '2, 4 at most: a quarter of the cores (vLLM: 0)' },
  { flags: '--max-audio-clip-filesize-mb <mb>', key: 'maxAudioClipFilesizeMb', description: "(ortllm) Largest audio file /v1/audio/* accept, in MiB (vLLM's env VLLM_MAX_AUDIO_CLIP_FILESIZE_MB, used when absent)", parse: parsePositiveNumber, defaultText: '25' },
  { flags: '--max-audio-duration-s <seconds>', key: 'maxAudioDurationSeconds', description: '(ortllm) Longest recording /v1/audio/* accept; longer ones get 400, from the header when it declares the length, else as soon as decoding passes it', parse: parsePositiveNumber, defaultText: '7200' },
  { flags: '--responses-store <store>', key: 'responsesStore', description: "(ortllm) Where stored responses (/v1/responses) live: 'memory' (in-process LRU) or redis://host:port/db (rediss:// for TLS), shared by replicas", defaultText: 'memory' },
  { flags: '--responses-store-ttl <seconds>', key: 'responsesStoreTtlSeconds', description: '(ortllm) Seconds a stored response is kept after its last write (0 = until evicted)', parse: parseInteger, defaultText: '2592000 (30 days)' },
  { flags: '--responses-store-max-size <size>', key: 'responsesStoreMaxBytes', description: '(ortllm) Byte budget of the in-process responses store; least recently used go first. Accepts 256MiB', parse: parseByteSize, defaultText: '256MiB' },
  { flags: '--responses-store-timeout <seconds>', key: 'responsesStoreTimeoutSeconds', description: '(ortllm) Seconds each call to a Redis responses store may take; slower or unreachable gets 503 with Retry-After', parse: parsePositiveNumber, defaultText: '2' },
  { flags: '--responses-chain-max-depth <n>', key: 'responsesChainMaxDepth', description: '(ortllm) Most responses one previous_response_id chain may link; a longer one gets 400', parse: positiveInt, defaultText: '100' },
  { flags: '--responses-chain-max-size <size>', key: 'responsesChainMaxBytes', description: '(ortllm) Largest stored conversation (JSON) a previous_response_id may continue; larger gets 400. Accepts 4MiB', parse: parseByteSize, defaultText: '4MiB' },
  { flags: '--unknown-request-fields <action>', key: 'unknownRequestFields', description: "(ortllm) Request fields an endpoint does not know: 'warn' logs their names once per request and ignores them (as vLLM), 'reject' answers 400, 'ignore' logs at debug level", choices: UNKNOWN_FIELDS_ACTIONS, defaultText: 'warn' },
  { flags: '--shutdown-timeout <seconds>', key: 'shutdownTimeoutSeconds', description: '(ortllm) Seconds in-flight requests get to finish after SIGTERM/SIGINT (new requests get 503 meanwhile)', parse: parseInteger, defaultText: '30' },
  { flags: '--dtype <dtype>', key: 'dtype', description: "Weight and compute type of the graph: auto/float/float32 = float32; half/float16 = float16 weights and activations (half the weight memory; on CPU slower at large batches); bfloat16 = BERT-style pooling models (BERT, XLM-RoBERTa: embed/classify/score) run their encoder linears in the addon's bfloat16 GEMM (weights rounded to bfloat16 at load, float32 sums) on CPUs with AVX512-BF16 (1.2-2x the embeddings/s of float32); refused at startup elsewhere. float16 applies to decoder generation graphs; pooling graphs and Whisper's transcription graphs refuse it at startup. An ONNX export keeps its own type", parse: parseDtype, defaultText: 'auto' },
  { flags: '--seed <seed>', key: 'seed', description: 'Seed of the sampler for requests without their own `seed` (a fixed seed makes a whole run reproducible)', parse: parseInteger, defaultText: '0' },
  { flags: '--gpu-memory-utilization <fraction>', key: 'gpuMemoryUtilization', description: 'KV cache budget = this fraction of memory minus what the model already uses: device memory with --device cuda (from nvidia-smi), RAM on cpu', parse: parseFraction, defaultText: '20% of free memory (not given)' },
  { flags: '--kv-cache-dtype <dtype>', key: 'kvCacheDtype', description: "KV cache storage: auto = the model's data type (config.json dtype/torch_dtype; float16 for GGUF, as llama.cpp's f16 cache), float32 where the native attention addon is missing (logged); float16 or bfloat16 halve the cache (need the addon); fp8 (= fp8_e4m3) or fp8_e5m2 quarter it (8-bit floats at scale 1.0, saturating as vLLM's; need the addon); float32 pins it; fp8_inc and fp8_ds_mla are refused", parse: parseKvCacheDtype, defaultText: 'auto' },
  { flags: '--num-gpu-blocks-override <n>', key: 'numGpuBlocksOverride', description: 'Number of KV cache blocks, overriding the memory-based size', parse: positiveInt },
  { flags: '--tokenizer <path>', key: 'tokenizer', description: 'Take the tokenizer and its chat template from this HF directory or GGUF file', defaultText: "the model's" },
  { flags: '--tokenizer-mode <mode>', key: 'tokenizerMode', description: 'auto / hf: the tokenizer.json (or GGUF) tokenizer; slow: the same (one implementation); mistral / custom are refused', parse: parseTokenizerMode, defaultText: 'auto' },
  { flags: '--max-num-partial-prefills <n>', key: 'maxNumPartialPrefills', description: 'Most prompts left partially prefilled by one step', parse: positiveInt, defaultText: '1' },
  { flags: '--max-long-partial-prefills <n>', key: 'maxLongPartialPrefills', description: 'Most prompts longer than --long-prefill-token-threshold left partially prefilled by one step (shorter ones may overtake them)', parse: positiveInt, defaultText: '1' },
  { flags: '--long-prefill-token-threshold <tokens>', key: 'longPrefillTokenThreshold', description: 'Prompts longer than this are long; no prefill chunk is larger (0 = off; 4% of --max-model-len when --max-num-partial-prefills > 1)', parse: nonNegativeInt, defaultText: '0' },
  { flags: '--disable-log-requests', key: 'enableLogRequests', negates: true, description: 'Do not log requests (vLLM\'s deprecated opposite of --enable-log-requests)' },
  { flags: '--disable-log-stats', key: 'disableLogStats', description: 'No periodic throughput line (every VLLM_LOG_STATS_INTERVAL seconds while busy)' },
  { flags: '--enable-server-load-tracking', key: 'enableServerLoadTracking', description: 'GET /load reports the generation requests in flight' },
  { flags: '--enable-sleep-mode', key: 'enableSleepMode', description: 'Allow POST /sleep (with VLLM_SERVER_DEV_MODE=1) to free the KV cache and the weights' },
  { flags: '--max-log-len <n>', key: 'maxLogLen', description: 'Longest request body (characters) --enable-log-requests prints', parse: nonNegativeInt, defaultText: 'unlimited' },
  { flags: '--override-generation-config <json>', key: 'overrideGenerationConfig', description: 'JSON object of sampling defaults (temperature, top_p, top_k, min_p, repetition_penalty, max_new_tokens) over generation_config.json', parse: parseJsonObject },
  { flags: '--default-chat-template-kwargs <json>', key: 'defaultChatTemplateKwargs', description: 'JSON object of chat template variables (e.g. {"enable_thinking": false}) under each request\'s chat_template_kwargs', parse: parseJsonObject },
  { flags: '--hf-overrides <json>', key: 'hfOverrides', description: 'JSON object of config.json keys over the model\'s config: rope_theta, rope_scaling, max_position_embeddings (others are refused)', parse: parseJsonObject },
  { flags: '--rope-theta <theta>', key: 'ropeTheta', description: 'Same as --hf-overrides \'{"rope_theta": THETA}\'', parse: parsePositiveNumber },
  { flags: '--rope-scaling <json>', key: 'ropeScaling', description: 'Same as --hf-overrides \'{"rope_scaling": JSON}\' (linear, dynamic, yarn, llama3)', parse: parseJsonObject },
  { flags: '--uds <path>', key: 'uds', description: 'Listen on this Unix domain socket instead of host:port' },
  { flags: '--disable-access-log-for-endpoints <paths>', key: 'disableAccessLogForEndpoints', description: 'Comma-separated paths left out of the access log (e.g. /health,/metrics)', parse: parseStringList },
  { flags: '--ssl-cert-reqs <n>', key: 'sslCertReqs', description: 'Client certificates: 0 none, 1 optional, 2 required (verified against --ssl-ca-certs)', parse: parseInteger, defaultText: '0' },
  { flags: '--ssl-ciphers <list>', key: 'sslCiphers', description: 'OpenSSL cipher list for TLS 1.2 and below' },
];
