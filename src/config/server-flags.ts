// The `ortllm serve` flags (vLLM's names), each mapped to a ServerConfig key. The CLI builds its
// commander options from this table; `--help` prints the descriptions with the defaults.

import { LOG_LEVELS, ServerConfig } from './server-config';
import { parseByteSize, parseHumanInt, parseInteger, parseStringList } from './units';

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

const parseNonNegativeInt = (text: string): number => {
  const n = parseInteger(text);
  if (n < 0) throw new Error(`'${text}' must be an integer >= 0`);
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
  { flags: '--ssl-keyfile <file>', key: 'sslKeyfile', description: 'TLS private key (PEM); serve HTTPS with --ssl-certfile' },
  { flags: '--ssl-certfile <file>', key: 'sslCertfile', description: 'TLS certificate chain (PEM)' },
  { flags: '--ssl-ca-certs <file>', key: 'sslCaCerts', description: 'CA certificates (PEM) to trust' },
  { flags: '--uvicorn-log-level <level>', key: 'logLevel', description: 'Log level', choices: LOG_LEVELS, defaultText: 'info' },
  { flags: '--log-level <level>', key: 'logLevel', description: 'Same as --uvicorn-log-level', choices: LOG_LEVELS },
  { flags: '--disable-uvicorn-access-log', key: 'disableUvicornAccessLog', description: 'No access log line per request' },
  { flags: '--enable-log-requests', key: 'enableLogRequests', description: 'Log every request (id, route, body)' },
  { flags: '--load-format <format>', key: 'loadFormat', description: "'auto' reads the weights; 'dummy' uses random weights of the model's shape", choices: ['auto', 'dummy'], defaultText: 'auto' },
  { flags: '--device <device>', key: 'device', description: "'cpu' or 'cuda' (onnxruntime execution provider)", choices: ['cpu', 'cuda'], defaultText: 'cpu' },
  { flags: '--disable-fastapi-docs', key: 'disableFastapiDocs', description: 'Do not serve /docs and /openapi.json' },
  { flags: '--max-request-body-size <size>', key: 'maxRequestBodyBytes', description: '(ortllm) Largest request body; bigger gets 413. Accepts 32MiB', parse: parseByteSize, defaultText: '32MiB' },
  { flags: '--max-json-depth <n>', key: 'maxJsonDepth', description: '(ortllm) Deepest nesting of objects/arrays in a JSON body; deeper gets 400 before parsing', parse: positiveInt, defaultText: '128' },
  { flags: '--max-json-object-keys <n>', key: 'maxJsonObjectKeys', description: '(ortllm) Most keys in one JSON object of a body; more gets 400 before parsing', parse: positiveInt, defaultText: '10000' },
  { flags: '--max-json-array-length <n>', key: 'maxJsonArrayLength', description: '(ortllm) Most items in one JSON array of a body; more gets 400 before parsing', parse: positiveInt, defaultText: '1048576' },
  { flags: '--max-json-string-length <chars>', key: 'maxJsonStringLength', description: '(ortllm) Longest JSON string of a body, in characters as sent; longer gets 400 before parsing', parse: parseHumanInt, defaultText: '8388608' },
  { flags: '--body-read-timeout <seconds>', key: 'bodyReadTimeoutSeconds', description: '(ortllm) Seconds a client gets to send a whole request; slower gets 408 (0 = no limit)', parse: parseNonNegative, defaultText: '60' },
  { flags: '--max-num-queued-reqs <n>', key: 'maxNumQueuedReqs', description: 'Most sequences the engine holds (waiting + running, n counts n); more get 503 with Retry-After', parse: positiveInt, defaultText: '4096 (vLLM: no limit)' },
  { flags: '--stream-stall-timeout <seconds>', key: 'streamStallTimeoutSeconds', description: "(ortllm) Seconds a streaming client may read nothing (its request paused) before it is aborted (0 = never)", parse: parseNonNegative, defaultText: '60' },
  { flags: '--tokenizer-pool-size <n>', key: 'tokenizerPoolSize', description: 'Worker threads that tokenize and render large inputs off the HTTP thread (0 = none)', parse: parseNonNegativeInt, defaultText: '1 (vLLM: 0)' },
  { flags: '--shutdown-timeout <seconds>', key: 'shutdownTimeoutSeconds', description: '(ortllm) Seconds in-flight requests get to finish after SIGTERM/SIGINT', parse: parseInteger, defaultText: '30' },
];
