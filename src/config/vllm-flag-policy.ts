// What `ortllm serve` does with each flag of `vllm serve --help` that it does not implement
// (those are in server-flags.ts): (b) accepted, with one startup line saying it has no effect
// here and why, or (c) refused with the reason and what to use instead. Adding a flag is one
// line. Value-dependent entries accept the harmless value (e.g. --tensor-parallel-size 1).
//
// Every flag of vLLM's serve --help is in this table or in server-flags.ts.

export type FlagStatus = 'no-effect' | 'refused';

export interface VllmFlagPolicy {
  /** commander syntax: '--swap-space <gib>' takes a value, '--enforce-eager' is a switch. */
  flags: string;
  /** vLLM's short aliases (-tp ...), rewritten to the long flag before parsing. */
  aliases?: string[];
  status: FlagStatus;
  why: string;
  /** For refusals: what to do instead. */
  instead?: string;
  /** A refused flag whose value is accepted (as no-effect) when this returns true. */
  harmless?: (value: unknown) => boolean;
}

const noEffect = (flags: string, why: string, aliases?: string[]): VllmFlagPolicy => ({ flags, status: 'no-effect', why, aliases });
const refused = (flags: string, why: string, instead: string, aliases?: string[]): VllmFlagPolicy => ({ flags, status: 'refused', why, instead, aliases });
/** Refused, except with the value that asks for nothing (then no effect). */
const refusedUnless = (flags: string, harmless: (value: unknown) => boolean, why: string, instead: string, aliases?: string[]): VllmFlagPolicy => ({
  flags,
  status: 'refused',
  why,
  instead,
  aliases,
  harmless,
});

const one = (v: unknown): boolean => Number(v) === 1;
const zero = (v: unknown): boolean => Number(v) === 0;
const oneOf = (...values: string[]) => (v: unknown): boolean => values.includes(String(v));

const ONE_REPLICA = 'one ortllm process serves one model replica on one device';
const SCALE_OUT = 'run more replicas behind a load balancer (Helm: replicaCount or autoscaling)';
const NO_MULTIMODAL = 'no model served here has a vision or audio encoder yet: there is no encoder, processor cache or embedding input to configure';
const NO_CUDA_GRAPHS = 'there are no CUDA graphs or torch.compile here: onnxruntime optimizes the graph once at start-up';
const NO_MOE = 'ortllm runs no mixture-of-experts models and no multi-GPU communication';
const NO_PYTHON = 'ortllm is not Python: it cannot import Python classes or plugins';
const LOCAL_FILES = 'models are local paths (GGUF files or Hugging Face directories); nothing is downloaded';

export const VLLM_FLAG_POLICY: VllmFlagPolicy[] = [
  // Front end
  refused('--headless', 'multi-node data parallelism is not supported', SCALE_OUT),
  refusedUnless('--api-server-count <n>', one, 'one HTTP server runs per process', SCALE_OUT, ['-asc']),
  refused('--grpc', 'there is no gRPC server', 'use the OpenAI-compatible HTTP API'),
  refused('--tool-server <servers>', 'built-in tool servers (browser, code interpreter, MCP) are not supported', 'run tools in your client'),
  refused('--log-config-file <file>', 'it is a Python logging dictConfig', 'use --uvicorn-log-level / VLLM_LOGGING_LEVEL and collect stdout'),
  refused('--enable-per-request-metrics', 'per-request timing fields in responses are not implemented', 'read the latency histograms on /metrics'),
  refused('--enable-tokenizer-info-endpoint', 'GET /tokenizer_info is not implemented', 'use POST /tokenize and /detokenize'),
  refused('--enable-log-outputs', 'generated outputs are not logged', 'use --enable-log-requests for the requests and read the responses client-side'),
  noEffect('--enable-log-deltas', 'it only matters with --enable-log-outputs'),
  noEffect('--cohere-is-reasoning-model', 'there are no /cohere endpoints here'),
  noEffect('--cohere-format <format>', 'there are no /cohere endpoints here'),
  noEffect('--log-error-stack', 'stacks of 500 errors are always logged (never sent to clients)'),
  refusedUnless('--fingerprint-mode <mode>', oneOf('none'), 'responses always carry system_fingerprint null', 'omit the flag (or use none)'),
  noEffect('--fingerprint-value <value>', 'system_fingerprint is always null'),
  noEffect('--data-parallel-supervisor-port <port>', 'there is no data-parallel supervisor'),
  noEffect('--dp-supervisor-probe-interval-s <s>', 'there is no data-parallel supervisor'),
  noEffect('--dp-supervisor-probe-timeout-s <s>', 'there is no data-parallel supervisor'),
  noEffect('--dp-supervisor-probe-failure-threshold <n>', 'there is no data-parallel supervisor'),
  refused('--enable-ssl-refresh', 'certificates are read once at start-up', 'restart (roll the pods) when certificates rotate'),
  refused('--middleware <path>', 'ASGI middleware are Python import paths', 'put a reverse proxy in front for custom request handling'),
  noEffect('--h11-max-incomplete-event-size <bytes>', "Node's HTTP parser limits request headers to 16 KiB; bodies are limited by --max-request-body-size"),
  noEffect('--h11-max-header-count <n>', "Node's HTTP parser limits the header count itself"),
  noEffect('--enable-offline-docs', '/docs is always served from bundled assets (works offline)'),
  noEffect('--enable-flash-late-interaction', 'late-interaction (ColBERT) scoring is not implemented; scores come from cross-encoders or embeddings'),
  // Model
  noEffect('--trust-remote-code', 'no Python model code is ever run: the supported architectures are built in'),
  refused('--hf-config-path <path>', 'config.json is read from the model directory', 'put config.json into the model directory'),
  noEffect('--revision <rev>', LOCAL_FILES),
  noEffect('--code-revision <rev>', LOCAL_FILES),
  noEffect('--tokenizer-revision <rev>', LOCAL_FILES),
  refusedUnless('--quantization <method>', oneOf('gguf', 'None'), 'quantization is read from the model file: GGUF Q8_0 / Q4_0 / Q4_K / Q6_K tensors stay quantized', 'convert the model to a quantized GGUF (llama.cpp convert + llama-quantize)', ['-q']),
  noEffect('--enforce-eager', NO_CUDA_GRAPHS),
  refusedUnless('--logprobs-mode <mode>', oneOf('raw_logprobs'), 'logprobs are always the raw log-softmax of the model output (raw_logprobs)', 'omit the flag'),
  noEffect('--disable-cascade-attn', 'there is no cascade attention kernel here'),
  refused('--enable-prompt-embeds', 'prompt_embeds inputs are not supported', 'send token ids (prompt as a list of ints) or text'),
  refusedUnless('--config-format <format>', oneOf('auto', 'hf'), 'Hugging Face config.json (or GGUF metadata) is the only format read', 'use auto'),
  noEffect('--hf-token [token]', LOCAL_FILES),
  refused('--logits-processor-pattern <pattern>', NO_PYTHON, 'use the built-in request fields (logit_bias, bad_words, allowed_token_ids, min_tokens)'),
  refusedUnless('--model-impl <impl>', oneOf('auto', 'vllm'), 'one implementation exists: the built-in ONNX graph', 'omit the flag'),
  refused('--override-attention-dtype <dtype>', 'attention runs in the --dtype of the graph', 'use --dtype'),
  refused('--logits-processors <classes...>', NO_PYTHON, 'use the built-in request fields (logit_bias, bad_words, allowed_token_ids, min_tokens)'),
  refused('--io-processor-plugin <plugin>', NO_PYTHON, 'pre- and post-process in your client'),
  // Loading
  noEffect('--download-dir <dir>', LOCAL_FILES),
  noEffect('--safetensors-load-strategy <strategy>', 'safetensors files are read sequentially into memory'),
  noEffect('--model-loader-extra-config <json>', 'there are no pluggable model loaders'),
  noEffect('--ignore-patterns <patterns...>', LOCAL_FILES),
  noEffect('--use-tqdm-on-load', 'loading prints no progress bar'),
  noEffect('--pt-load-map-location <location>', 'PyTorch checkpoints are not read (safetensors, ONNX and GGUF are)'),
  // Structured outputs (deprecated spellings; --structured-outputs-config and the two
  // --guided-decoding-disable-* switches are implemented, see server-flags.ts)
  refusedUnless(
    '--guided-decoding-backend <backend>',
    (v) => ['xgrammar', 'auto'].includes(String(v).split(':')[0]),
    'the structured-outputs backend is xgrammar (xgrammar and auto are accepted)',
    'leave it out, or pass xgrammar',
  ),
  noEffect('--guided-decoding-disable-fallback', 'there is one structured-outputs backend (xgrammar), so nothing to fall back to'),
  // Parallelism
  noEffect('--distributed-executor-backend <backend>', ONE_REPLICA),
  refusedUnless('--pipeline-parallel-size <n>', one, ONE_REPLICA, SCALE_OUT, ['-pp']),
  refusedUnless('--tensor-parallel-size <n>', one, ONE_REPLICA, `${SCALE_OUT}; a model too big for one device does not fit ortllm`, ['-tp']),
  refusedUnless('--decode-context-parallel-size <n>', one, ONE_REPLICA, SCALE_OUT, ['-dcp']),
  refusedUnless('--data-parallel-size <n>', one, ONE_REPLICA, SCALE_OUT, ['-dp']),
  refused('--data-parallel-rank <n>', ONE_REPLICA, SCALE_OUT, ['-dpn']),
  refused('--data-parallel-start-rank <n>', ONE_REPLICA, SCALE_OUT, ['-dpr']),
  refusedUnless('--data-parallel-size-local <n>', one, ONE_REPLICA, SCALE_OUT, ['-dpl']),
  refused('--data-parallel-address <address>', ONE_REPLICA, SCALE_OUT, ['-dpa']),
  refused('--data-parallel-rpc-port <port>', ONE_REPLICA, SCALE_OUT, ['-dpp']),
  noEffect('--data-parallel-backend <backend>', ONE_REPLICA, ['-dpb']),
  refused('--data-parallel-hybrid-lb', ONE_REPLICA, SCALE_OUT),
  refused('--data-parallel-external-lb', ONE_REPLICA, SCALE_OUT),
  refused('--data-parallel-multi-port-external-lb', ONE_REPLICA, SCALE_OUT),
  noEffect('--enable-expert-parallel', NO_MOE, ['-ep']),
  noEffect('--all2all-backend <backend>', NO_MOE),
  noEffect('--enable-dbo', NO_MOE),
  noEffect('--dbo-decode-token-threshold <n>', NO_MOE),
  noEffect('--dbo-prefill-token-threshold <n>', NO_MOE),
  noEffect('--disable-nccl-for-dp-synchronization', NO_MOE),
  noEffect('--enable-eplb', NO_MOE),
  noEffect('--eplb-config <json>', NO_MOE),
  noEffect('--expert-placement-strategy <strategy>', NO_MOE),
  noEffect('--num-redundant-experts <n>', NO_MOE),
  noEffect('--eplb-window-size <n>', NO_MOE),
  noEffect('--eplb-step-interval <n>', NO_MOE),
  noEffect('--eplb-log-balancedness', NO_MOE),
  noEffect('--max-parallel-loading-workers <n>', 'weights load in the engine thread, once'),
  noEffect('--ray-workers-use-nsight', 'there are no Ray workers'),
  noEffect('--disable-custom-all-reduce', NO_MOE),
  refused('--worker-cls <class>', NO_PYTHON, 'omit the flag'),
  refused('--worker-extension-cls <class>', NO_PYTHON, 'omit the flag'),
  noEffect('--enable-multimodal-encoder-data-parallel', NO_MULTIMODAL),
  // KV cache
  noEffect('--swap-space <gib>', 'preempted sequences are recomputed, never swapped to CPU'),
  noEffect('--prefix-caching-hash-algo <algo>', 'prefix blocks are hashed with SHA-256 of the token ids (and cache_salt)'),
  refusedUnless('--cpu-offload-gb <gib>', zero, 'weights are not offloaded', 'use --dtype float16 or a quantized GGUF to shrink the weights'),
  noEffect('--calculate-kv-scales', 'the fp8 KV caches keep the per-layer k/v scales at 1.0, vLLM\'s default; they are not computed from the first batch'),
  noEffect('--kv-sharing-fast-prefill', 'no supported architecture shares KV between layers'),
  noEffect('--mamba-cache-dtype <dtype>', 'there are no Mamba architectures here'),
  noEffect('--mamba-ssm-cache-dtype <dtype>', 'there are no Mamba architectures here'),
  noEffect('--mamba-block-size <n>', 'there are no Mamba architectures here'),
  refused('--kv-offloading-size <gib>', 'the KV cache is not offloaded', 'size it with --kv-cache-memory-bytes'),
  refused('--kv-offloading-backend <backend>', 'the KV cache is not offloaded', 'size it with --kv-cache-memory-bytes'),
  // Multimodal
  noEffect('--enable-mm-embeds', NO_MULTIMODAL),
  noEffect('--disable-mm-preprocessor-cache', NO_MULTIMODAL),
  noEffect('--mm-processor-cache-type <type>', NO_MULTIMODAL),
  noEffect('--mm-shm-cache-max-object-size-mb <mb>', NO_MULTIMODAL),
  noEffect('--mm-encoder-tp-mode <mode>', NO_MULTIMODAL),
  noEffect('--mm-encoder-attn-backend <backend>', NO_MULTIMODAL),
  noEffect('--interleave-mm-strings', NO_MULTIMODAL),
  noEffect('--skip-mm-profiling', NO_MULTIMODAL),
  noEffect('--video-pruning-rate <rate>', NO_MULTIMODAL),
  // LoRA (--enable-lora and the flags it uses are in flags.ts)
  noEffect('--lora-extra-vocab-size <n>', 'adapters add no vocabulary rows here (newer vLLM dropped extra LoRA vocabularies too)'),
  noEffect('--fully-sharded-loras', ONE_REPLICA),
  refused('--default-mm-loras <json>', NO_MULTIMODAL, 'name the adapter in each request\'s `model`'),
  // Observability
  noEffect('--show-hidden-metrics-for-version <version>', 'no deprecated (hidden) metrics exist here'),
  refused('--otlp-traces-endpoint <url>', 'OpenTelemetry tracing is not implemented', 'use /metrics and the access log (X-Request-Id with --enable-request-id-headers)'),
  noEffect('--collect-detailed-traces <modules>', 'it only matters with --otlp-traces-endpoint'),
  noEffect('--kv-cache-metrics', 'KV block residency metrics are not implemented; vllm:kv_cache_usage_perc is exported'),
  noEffect('--kv-cache-metrics-sample <rate>', 'KV block residency metrics are not implemented'),
  refused('--profiler-config <json>', 'the torch profiler does not exist here', 'profile the process with node --cpu-prof'),
  // Scheduler
  noEffect('--num-lookahead-slots <n>', 'speculative decoding reserves its own slots (num_speculative_tokens of --speculative-config)'),
  refusedUnless('--enable-chunked-prefill', (v) => v !== false, 'prefill is always chunked by --max-num-batched-tokens', 'raise --max-num-batched-tokens to at least --max-model-len to prefill every prompt in one step'),
  noEffect('--disable-chunked-mm-input', NO_MULTIMODAL),
  refused('--scheduler-cls <class>', NO_PYTHON, 'use --scheduling-policy'),
  noEffect('--disable-hybrid-kv-cache-manager', 'there is one KV cache group (no hybrid models)'),
  noEffect('--async-scheduling', 'steps run back to back in the engine thread; there is no separate async scheduling mode'),
  noEffect('--stream-interval <n>', 'each step streams its tokens at once; a client that falls behind gets the steps it missed in one chunk'),
  // Compilation
  noEffect('--cudagraph-capture-sizes <sizes...>', NO_CUDA_GRAPHS),
  noEffect('--cuda-graph-sizes <sizes...>', NO_CUDA_GRAPHS),
  noEffect('--max-cudagraph-capture-size <n>', NO_CUDA_GRAPHS),
  noEffect('--compilation-config <json>', NO_CUDA_GRAPHS, ['-O']),
  noEffect('--optimization-level <level>', NO_CUDA_GRAPHS),
  // Engine extras
  noEffect('--additional-config <json>', 'no platform plugin reads it'),
  noEffect('--aggregate-engine-logging', 'there is one engine, so its stats are already the aggregate'),
];
