// Contracts of the engine (plain TypeScript, no NestJS). Field names of SamplingParams
// follow vLLM's `SamplingParams` exactly (snake_case) because /inference/v1/generate and
// /render put this struct on the wire as-is.

import type { ChatMessage, ChatRenderOptions, ChatTemplate, DecodeOptions, GenerationDefaults, ModelArchConfig, ModelOutput, PoolerSettings, Tokenizer } from '../model/types';
import type { AudioFeatureConfig } from '../model/audio/feature-config';

export type OutputKind = 0 | 1 | 2; // 0 CUMULATIVE, 1 DELTA, 2 FINAL_ONLY (vLLM RequestOutputKind)
export const OUTPUT_KIND = { CUMULATIVE: 0, DELTA: 1, FINAL_ONLY: 2 } as const;

export interface RepetitionDetectionParams {
  /** Largest n-gram checked. */
  max_pattern_size: number;
  /** Smallest n-gram checked. */
  min_pattern_size: number;
  /** How many back-to-back repeats end the request (finish_reason 'repetition'). */
  min_count: number;
}

/**
 * vLLM's `StructuredOutputsParams`: exactly one of json, regex, choice, grammar, json_object,
 * structural_tag constrains the output (see src/engine/structured/).
 */
export interface StructuredOutputsParams {
  /** A JSON schema (object, or its JSON text). */
  json?: string | Record<string, unknown> | null;
  regex?: string | null;
  choice?: string[] | null;
  /** EBNF as xgrammar takes it; the GBNF (llama.cpp) and Lark spellings are converted. */
  grammar?: string | null;
  json_object?: boolean | null;
  /** xgrammar structural tag (JSON text): {"format": …} or the legacy {"structures", "triggers"}. */
  structural_tag?: string | null;
  /** Only one backend (xgrammar), so there is nothing to fall back to; accepted. */
  disable_fallback?: boolean | null;
  disable_any_whitespace?: boolean | null;
  disable_additional_properties?: boolean | null;
  /** Refused: xgrammar has no custom whitespace pattern. */
  whitespace_pattern?: string | null;
}

export interface SamplingParams {
  n: number;
  best_of: number | null;
  presence_penalty: number;
  frequency_penalty: number;
  repetition_penalty: number;
  temperature: number;
  top_p: number;
  /** 0 or -1 disables. */
  top_k: number;
  min_p: number;
  seed: number | null;
  stop: string[];
  stop_token_ids: number[];
  ignore_eos: boolean;
  /** null = up to the context limit. */
  max_tokens: number | null;
  min_tokens: number;
  /** Number of top logprobs per sampled token (0 = only the sampled one); null = none. -1 = whole vocab. */
  logprobs: number | null;
  prompt_logprobs: number | null;
  /** Explicit token ids to report logprobs for at each position (instead of top-k). */
  logprob_token_ids: number[] | null;
  detokenize: boolean;
  skip_special_tokens: boolean;
  spaces_between_special_tokens: boolean;
  include_stop_str_in_output: boolean;
  truncate_prompt_tokens: number | null;
  truncation_side: 'left' | 'right' | null;
  logit_bias: Record<string, number> | null;
  allowed_token_ids: number[] | null;
  bad_words: string[];
  repetition_detection: RepetitionDetectionParams | null;
  use_beam_search: boolean;
  length_penalty: number;
  output_kind: OutputKind;
  /** Constrained decoding (JSON schema, regex, choice, grammar…); null = unconstrained. */
  structured_outputs: StructuredOutputsParams | null;
  /** vLLM's `extra_args`: the request's `vllm_xargs`, carried for custom extensions (the engine itself reads none). */
  extra_args: Record<string, unknown> | null;
}

export interface EngineRequest {
  requestId: string;
  /** The (decoder) prompt. */
  promptTokenIds: number[];
  /** Encoder-decoder models: the encoder's input (Whisper: log-mel features [mels, frames]). */
  encoderInput?: Float32Array;
  params: SamplingParams;
  priority?: number;
  cacheSalt?: string | null;
  /** When the HTTP request arrived, in the request clock's ms (engine/clock.ts): queue time and e2e latency. */
  arrivalTime?: number;
  /**
   * Structured outputs constrain only what follows this text in the output (the end of a
   * reasoning section, e.g. `</think>`); absent or null: from the first token.
   */
  structuredOutputsAfter?: string | null;
  /** The LoRA adapter to run with (vLLM's LoRARequest); absent or null: the base model. */
  lora?: LoraRequest | null;
  /** The request's kv_transfer_params (prefill/decode disaggregation with --kv-transfer-config). */
  kvTransferParams?: Record<string, unknown> | null;
  /** Images of a vision-language prompt, in prompt order, with their placements in the prompt. */
  multiModal?: MultiModalInput | null;
}

/** One decoded image: 8-bit RGB, row-major, `width * height * 3` bytes. */
export interface DecodedImage {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** What a multimodal prompt carries besides its tokens: the images and the processor's overrides. */
export interface MultiModalInput {
  images: DecodedImage[];
  /** --mm-processor-kwargs merged with the request's mm_processor_kwargs (request wins). */
  processorKwargs: Record<string, unknown>;
  /** Set by the serving side once the prompt's placeholders are expanded: where each image's rows go, in image order. */
  placements?: ImagePlacement[];
  /** M-RoPE models (VisionModel.mrope): the prompt's (t, h, w) positions, [3 * prompt length], and what text after the prompt adds to its index. */
  mrope?: { positions: Int32Array; delta: number };
}

/** One image's run of image tokens in the prompt (vLLM's PlaceholderRange) and its identity. */
export interface ImagePlacement {
  /** Prompt index of the run's first image token. */
  offset: number;
  /** Image tokens in the run = rows of the encoder's output. */
  length: number;
  /** The image and processor settings as a hash (vLLM's mm_hash): the encoder cache's key and what the prefix cache hashes in place of the run's token ids. */
  hash: string;
}

/** vLLM's LoRARequest: an adapter by served name, the engine's int id for it (> 0), and where its files are. */
export interface LoraRequest {
  name: string;
  id: number;
  path: string;
}

/** --enable-lora and its flags, as the engine takes them. */
export interface LoraEngineOptions {
  /** --max-loras: adapters one step may hold. */
  maxLoras: number;
  /** --max-lora-rank. */
  maxRank: number;
  /** --max-cpu-loras: adapters kept loaded (least recently used reloaded from their path on demand). */
  maxCpuLoras: number;
  /** --lora-dtype. */
  dtype: 'auto' | 'float32' | 'float16' | 'bfloat16';
}

/** A pooling request (vLLM's encode): the whole prompt runs once, one vector comes back, no KV is kept. */
export interface EncodeRequest {
  requestId: string;
  promptTokenIds: number[];
  /** Segment ids of a cross-encoder's sentence pair, one per token. */
  tokenTypeIds?: number[] | null;
  priority?: number;
  /** When the HTTP request arrived, in the request clock's ms (engine/clock.ts): queue time and e2e latency. */
  arrivalTime?: number;
}

/** The pooled output of an EncodeRequest (vLLM's PoolingRequestOutput). */
export interface PoolingRequestOutput {
  requestId: string;
  promptTokenIds: number[];
  /** Pooled hidden state, or classifier logits, before normalisation or activation. */
  data: Float32Array;
}

export type FinishReason = 'stop' | 'length' | 'abort' | 'error' | 'repetition';

/** Logprob of one token at one position; strings are added by the API layer from the tokenizer. */
export interface TokenLogprob {
  tokenId: number;
  logprob: number;
  /** 1-based rank in the distribution. */
  rank: number;
}

export interface PositionLogprobs {
  /** The sampled (or prompt) token. */
  chosen: TokenLogprob;
  /** Top-k (or logprob_token_ids) entries in rank order; may include the chosen token. */
  top: TokenLogprob[];
}

export interface CompletionOutput {
  index: number;
  /** Text per output_kind (delta since last yield, or cumulative); '' when detokenize is false. */
  text: string;
  tokenIds: number[];
  cumulativeLogprob: number | null;
  logprobs: PositionLogprobs[] | null;
  finishReason: FinishReason | null;
  /** The stop string or stop token id that ended the sequence; null for EOS / length. */
  stopReason: string | number | null;
}

export interface RequestOutput {
  requestId: string;
  promptTokenIds: number[];
  /** One entry per prompt position (first is null), when prompt_logprobs was asked. */
  promptLogprobs: (PositionLogprobs | null)[] | null;
  outputs: CompletionOutput[];
  finished: boolean;
  /** Prompt tokens served from the prefix cache (or pulled from a prefill replica). */
  numCachedTokens: number;
  /** Set when finishReason is 'error'. */
  error?: string;
  /** The KV connector's kv_transfer_params for the client (a prefill's blocks a decode replica may pull); on the final output only. */
  kvTransferParams?: Record<string, unknown>;
}

export interface FinishedRequestStats {
  finishReason: FinishReason;
  e2eLatency: number; // seconds
  queueTime: number;
  prefillTime: number;
  decodeTime: number;
  inferenceTime: number;
  promptTokens: number;
  generationTokens: number;
  maxTokensParam: number | null;
  n: number;
  /** Most tokens any of the request's completions generated (vllm:request_max_num_generation_tokens). */
  maxGenerationTokens: number;
}

/** Emitted once per engine step: the metrics module turns these into prom-client updates. */
export interface IterationStats {
  promptTokens: number;
  generationTokens: number;
  timeToFirstTokens: number[]; // seconds
  interTokenLatencies: number[]; // seconds
  finished: FinishedRequestStats[];
  numPreemptions: number;
  prefixCacheQueries: number; // tokens
  prefixCacheHits: number; // tokens
  /** Prompt tokens of newly scheduled requests served from the prefix cache. */
  promptTokensCached: number;
  /** Prompt tokens that were cached but computed again (a fully cached prompt recomputes its last block to get logits). */
  promptTokensRecomputed: number;
  /** Prompt tokens of newly scheduled requests by where their KV came from (vllm:prompt_tokens_by_source_total); absent when none. */
  promptTokensBySource?: PromptTokenSources;
  /** Structured outputs: seconds of each grammar compiled this step (cache misses). */
  grammarCompileSeconds?: number[];
  grammarCacheHits?: number;
  grammarCacheMisses?: number;
  /** Images looked up in the encoder cache this step, and those found (vllm:mm_cache_queries / _hits); absent when none. */
  mmCacheQueries?: number;
  mmCacheHits?: number;
  /** Speculative decoding (absent without --speculative-config). */
  specDecoding?: SpecDecodingStats;
  /** KV transfers between replicas since the last report (absent without --kv-transfer-config, or when none happened). */
  kvTransfer?: KvTransferStats;
}

/** vLLM's PromptTokenStats sources: computed here, from the local prefix cache (recomputed ones included), pulled from another replica. */
export interface PromptTokenSources {
  localCompute: number;
  localCacheHit: number;
  externalKvTransfer: number;
}

/** vLLM's KV connector stats (NixlKVConnectorStats): per pull, and the failures and expiries. */
export interface KvTransferStats {
  /** Per successful pull: its duration in seconds and the bytes it moved. */
  transferSeconds: number[];
  transferBytes: number[];
  /** Pulls that failed (the request prefilled locally). */
  numFailedTransfers: number;
  /** Prefills whose blocks were freed unpulled after abort_request_timeout (producer side). */
  numExpired: number;
}

/** One step's speculative decoding, in vLLM's terms: a "draft" is one sequence's drafted tokens in one step. */
export interface SpecDecodingStats {
  numDrafts: number;
  numDraftTokens: number;
  numAcceptedTokens: number;
  /** Per draft position (0 .. k-1): drafts accepted there. */
  acceptedPerPosition: number[];
}

export interface SchedulerStats {
  numRunning: number;
  numWaiting: number;
  /** Sequences set aside because their client stopped reading (neither running nor waiting); absent = 0. */
  numPaused?: number;
  /** Of numWaiting, those not waiting for capacity (a structured-output grammar still compiling). */
  numDeferred?: number;
  kvCacheUsage: number; // 0..1
  numBlocks: number;
  blockSize: number;
  /** With --enable-lora: names of the adapters of running and of waiting requests (vllm:lora_requests_info). */
  runningLoraAdapters?: string[];
  waitingLoraAdapters?: string[];
}

export interface EngineHealth {
  alive: boolean;
  error?: string;
}

/** A conversation rendered by the chat template, and its token ids when encoding was asked. */
export interface RenderedChat {
  text: string;
  tokenIds: number[] | null;
}

/**
 * The tokenizer and chat-template work of requests, awaited so that large jobs (long prompts,
 * many prompts or conversations, long outputs) run on a worker thread instead of the calling
 * (HTTP) thread; small ones run inline. Template failures reject with ChatTemplateError.
 */
export interface TextProcessor {
  /** tokenLimit: refuse (PromptTooLongError) a text found to reach it before tokenizing all of it. */
  encode(texts: readonly string[], addSpecialTokens: boolean, tokenLimit?: number | null): Promise<number[][]>;
  decode(ids: readonly number[], opts?: DecodeOptions): Promise<string>;
  /**
   * One rendering per conversation, with the model's template (opts.template overrides it; it is
   * used alone when the model has none). `encode` tokenizes each rendering too.
   */
  renderChat(conversations: ChatMessage[][], opts: ChatRenderOptions, encode: { addSpecialTokens: boolean; tokenLimit?: number | null } | null): Promise<RenderedChat[]>;
}

/** vLLM sleep levels: 1 keeps the weights in host memory, 2 discards them (reloaded on wake). */
export type SleepLevel = 1 | 2;
/** What happens to requests in flight when the engine goes to sleep. */
export type SleepMode = 'abort' | 'wait';

/** The engine's sleep state (vllm:engine_sleep_state): 0 = awake, else the level it sleeps at. */
export interface SleepState {
  sleeping: boolean;
  level: SleepLevel | 0;
}

/**
 * Room held under --max-num-queued-reqs for the engine requests of one API request (all its
 * prompts' sequences at once); generate() and encode() draw on it. Released when that request ends.
 */
export interface SequenceReservation {
  readonly sequences: number;
  release(): void;
}

/** What the HTTP layer sees of the engine (vLLM's EngineClient). */
export interface EngineClient {
  readonly modelConfig: ModelArchConfig;
  readonly maxModelLen: number;
  readonly maxNumSeqs: number;
  /** null with --skip-tokenizer-init / --tokens-only. */
  readonly tokenizer: Tokenizer | null;
  readonly chatTemplate: ChatTemplate | null;
  /** Tokenizing and rendering off the calling thread when large; null without a tokenizer. */
  readonly text: TextProcessor | null;
  readonly eosTokenIds: number[];
  /** generation_config.json defaults (empty with --generation-config vllm). */
  readonly generationDefaults: GenerationDefaults;
  /**
   * Throws when `sequences` more sequences cannot be taken now: EngineOverloadedError past
   * --max-num-queued-reqs (503), RequestValidationError when they alone exceed it. generate()
   * checks again; callers ask early, before tokenizing, to refuse cheaply. A 400 names `param`.
   */
  ensureCapacity(sequences: number, param?: string | null): void;
  /**
   * Holds room for `sequences` sequences at once, all or none (throws as ensureCapacity does; a
   * 400 names `param`), for requests of several engine requests: pass it to each generate() or
   * encode() call, and release it when they have all ended.
   */
  reserve(sequences: number, param?: string | null): SequenceReservation;
  /** Speech-to-text models: the audio features their encoder takes (null for text models). */
  readonly audioFeatures: AudioFeatureConfig | null;
  /** A vision-language model's image side as the serving side reads it (prompt format, processor); absent or null: text only. */
  readonly vision?: import('../model/vision/vision-model').VisionModel | null;
  /** What the runner returns: 'logits' for generation models, pooled vectors otherwise. */
  readonly modelOutput: ModelOutput;
  /** How pooled outputs are served; null for generation models. */
  readonly pooler: PoolerSettings | null;
  generate(request: EngineRequest, signal?: AbortSignal, reservation?: SequenceReservation): AsyncIterable<RequestOutput>;
  /** Pooling models only: runs the prompt through the same worker, scheduler and token budget. */
  encode(request: EncodeRequest, signal?: AbortSignal, reservation?: SequenceReservation): Promise<PoolingRequestOutput>;
  abort(requestIds: string[]): void;
  health(): EngineHealth;
  stats(): SchedulerStats;
  onIteration(listener: (stats: IterationStats) => void): () => void;
  /** Frees the KV cache and the session (level 2: the weights too); generate() refuses until wakeUp(). */
  sleep(level: SleepLevel, mode: SleepMode): Promise<void>;
  wakeUp(): Promise<void>;
  sleepState(): SleepState;
  /** Forgets every cached prefix block (blocks in use stay with their requests). */
  resetPrefixCache(): Promise<void>;
  /** What the prefix cache holds, hashes as KV events send them; absent in clients without a KV cache view. */
  kvCachedBlocks?(): Promise<import('./kv-events/kv-event-groups').KvCachedBlocks>;
  /** EngineOptions.lora (null without --enable-lora); absent in clients that predate it. */
  readonly lora?: LoraEngineOptions | null;
  /** With EngineOptions.lora: loads and checks the adapter (rejects with its LoraLoadError message), keeping it for requests that name its id. */
  loadLora(request: LoraRequest): Promise<void>;
  /** Forgets adapter `id` once no request uses it. */
  unloadLora(id: number): Promise<void>;
  shutdown(): Promise<void>;
}

/** How the engine is built (ServerConfig maps flags onto it). src/engine/index.ts exports
 * `createEngine(options): Promise<EngineClient>`. */
export interface EngineOptions {
  load: import('../model/types').LoadModelOptions;
  /** Served name (metrics model_name label). */
  modelName: string;
  /** null = the model's context length. */
  maxModelLen: number | null;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  schedulingPolicy: 'fcfs' | 'priority';
  /** KV cache budget in bytes; null = a fraction of free memory. */
  kvCacheMemoryBytes: number | null;
  blockSize: number;
  enablePrefixCaching: boolean;
  /** --mm-processor-cache-gb in bytes: image encoder outputs kept by image hash (absent: 4 GiB; 0: none). */
  mmProcessorCacheBytes?: number;
  device: 'cpu' | 'cuda';
  /** ORT intra-op threads; null = every core but one, which stays with the HTTP thread. */
  intraOpThreads: number | null;
  /** Run the engine core in a worker_thread (default true; tests may run it in-process). */
  useWorker: boolean;
  /** Most sequences (waiting + running) held at once; more are refused (EngineOverloadedError). null = no limit. */
  maxNumQueuedReqs?: number | null;
  /** Worker threads for large tokenize / render / decode jobs; 0 or absent = on the calling thread. */
  tokenizerPoolSize?: number;
  /** --structured-outputs-config defaults (disable_any_whitespace, disable_additional_properties). */
  structuredOutputs?: import('./structured/grammar-spec').StructuredOutputsDefaults;
  /** --structured-outputs-limits (absent: DEFAULT_STRUCTURED_OUTPUTS_LIMITS). */
  structuredOutputsLimits?: import('./structured/grammar-limits').StructuredOutputsLimits;
  /** --dtype: the graph's weight/compute type. */
  dtype?: 'auto' | 'float32' | 'float16' | 'bfloat16';
  /** --seed: seeds the sampler of requests without their own seed. */
  seed?: number;
  /** --gpu-memory-utilization: KV budget = this fraction of memory minus what the model uses. */
  gpuMemoryUtilization?: number | null;
  /** --kv-cache-dtype; absent = 'auto' (the model's data type, resolved by the runner module). */
  kvCacheDtype?: import('../model/runner/kv-dtype').KvCacheDtypeFlag;
  /** --num-gpu-blocks-override. */
  numBlocksOverride?: number | null;
  partialPrefills?: PartialPrefillLimits;
  /** --enable-lora (absent: requests cannot name adapters). */
  lora?: LoraEngineOptions;
  /** --speculative-config (absent: no speculative decoding). */
  speculative?: import('./speculative/speculative-config').SpeculativeConfig;
  /** --kv-events-config (absent: no KV cache events). */
  kvEvents?: import('./kv-events/kv-events-config').KvEventsConfig;
  /** --kv-transfer-config (absent: no KV transfer between replicas). */
  kvTransfer?: import('./kv-transfer/kv-transfer-config').KvTransferConfig;
  /** --host: where a KV connector listens when its config names no host (null: all interfaces, advertised as 127.0.0.1). */
  serverHost?: string | null;
}

/** --max-num-partial-prefills, --max-long-partial-prefills, --long-prefill-token-threshold. */
export interface PartialPrefillLimits {
  maxNumPartialPrefills: number;
  maxLongPartialPrefills: number;
  /** Prompts longer than this are "long", and no prefill chunk exceeds it; 0 = off. */
  longPrefillTokenThreshold: number;
}
