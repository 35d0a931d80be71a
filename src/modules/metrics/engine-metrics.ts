// vLLM's engine metrics (PrometheusStatLogger) fed from EngineClient: IterationStats on every
// engine step, SchedulerStats read at scrape time. Counters carry `_total` in their names since
// prom-client does not add it (prometheus_client does, so the exposed names match vLLM's).

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineClient, FinishedRequestStats, IterationStats } from '../../engine/types';
import {
  buckets125,
  GRAMMAR_COMPILE_BUCKETS,
  INTER_TOKEN_BUCKETS,
  ITERATION_TOKENS_BUCKETS,
  REQUEST_LATENCY_BUCKETS,
  REQUEST_N_BUCKETS,
  TTFT_BUCKETS,
} from './buckets';
import { SpecDecodingMetrics } from './spec-decoding-metrics';
import { KvTransferMetrics } from './kv-transfer-metrics';

export interface EngineMetricsOptions {
  modelName: string;
  maxModelLen: number;
  /** vllm:cache_config_info's labels: every vLLM CacheConfig field, as Python's str() prints it. */
  cacheConfigInfo: () => Record<string, string>;
  /** --max-loras with --enable-lora (vllm:lora_requests_info exists only then); absent or null: LoRA is off. */
  maxLoras?: number | null;
  /** --speculative-config's num_speculative_tokens (the spec_decode counters exist only then); absent or null: off. */
  numSpeculativeTokens?: number | null;
  /** --kv-transfer-config is set: the KV transfer metrics are registered. */
  kvTransfer?: boolean;
}

/** vllm:engine_sleep_state's label values; `awake` is 1 while awake, the level's label while asleep. */
const SLEEP_STATES = ['awake', 'weights_offloaded', 'discard_all'] as const;

const LABELS = ['model_name', 'engine'] as const;

/** vLLM's prompt token sources, in PromptTokenSources' order. */
const PROMPT_TOKEN_SOURCES = ['local_compute', 'local_cache_hit', 'external_kv_transfer'] as const;

export class EngineMetrics {
  private readonly labels: { model_name: string; engine: string };
  private readonly promptTokens: Counter<string>;
  private readonly generationTokens: Counter<string>;
  private readonly preemptions: Counter<string>;
  private readonly prefixQueries: Counter<string>;
  private readonly prefixHits: Counter<string>;
  private readonly requestSuccess: Counter<string>;
  private readonly iterationTokens: Histogram<string>;
  private readonly ttft: Histogram<string>;
  private readonly interToken: Histogram<string>;
  private readonly timePerOutputToken: Histogram<string>;
  private readonly e2eLatency: Histogram<string>;
  private readonly queueTime: Histogram<string>;
  private readonly inferenceTime: Histogram<string>;
  private readonly prefillTime: Histogram<string>;
  private readonly decodeTime: Histogram<string>;
  private readonly requestPromptTokens: Histogram<string>;
  private readonly requestGenerationTokens: Histogram<string>;
  private readonly requestParamsN: Histogram<string>;
  private readonly requestParamsMaxTokens: Histogram<string>;
  private readonly promptTokensCached: Counter<string>;
  private readonly promptTokensRecomputed: Counter<string>;
  private readonly promptTokensBySource: Counter<string>;
  private readonly maxNumGenerationTokens: Histogram<string>;
  private readonly grammarCompileTime: Histogram<string>;
  private readonly grammarCacheQueries: Counter<string>;
  private readonly grammarCacheHits: Counter<string>;
  private readonly mmCacheQueries: Counter<string>;
  private readonly mmCacheHits: Counter<string>;
  private readonly loraInfo: Gauge<string> | null = null;
  private readonly maxLoras: string;
  private readonly specDecoding: SpecDecodingMetrics | null;
  private readonly kvTransfer: KvTransferMetrics | null;

  constructor(
    registry: Registry,
    private readonly engine: EngineClient,
    options: EngineMetricsOptions,
  ) {
    this.labels = { model_name: options.modelName, engine: '0' };
    const labels = this.labels;
    const registers = [registry];
    const counter = (name: string, help: string, extra: string[] = []): Counter<string> =>
      new Counter({ name, help, labelNames: [...LABELS, ...extra], registers });
    const histogram = (name: string, help: string, buckets: number[]): Histogram<string> =>
      new Histogram({ name, help, buckets, labelNames: [...LABELS], registers });
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({
        name,
        help,
        labelNames: [...LABELS],
        registers,
        collect() {
          this.set(labels, read());
        },
      });
    };

    gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', () => engine.stats().numRunning);
    gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', () => engine.stats().numWaiting);
    gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', () => engine.stats().kvCacheUsage);
    // Not a vLLM metric: vLLM's process exits when its engine dies, ortllm answers 503 on /health
    // instead, so alerts need the state itself.
    gauge('ortllm_engine_alive', '1 while the engine can serve, 0 once it died (GET /health answers 503).', () => (engine.health().alive ? 1 : 0));
    new Gauge({
      name: 'vllm:num_requests_waiting_by_reason',
      help: "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
      labelNames: [...LABELS, 'reason'],
      registers,
      collect() {
        // 'deferred': requests pulling their prompt's KV, whose structured-output grammar still compiles, or passed over for their LoRA adapter.
        const stats = engine.stats();
        const deferred = stats.numDeferred ?? 0;
        this.set({ ...labels, reason: 'capacity' }, stats.numWaiting - deferred);
        this.set({ ...labels, reason: 'deferred' }, deferred);
      },
    });
    new Gauge({
      name: 'vllm:engine_sleep_state',
      help: 'Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.',
      labelNames: [...LABELS, 'sleep_state'],
      registers,
      collect() {
        const state = engine.sleepState();
        const current = !state.sleeping ? 'awake' : state.level === 2 ? 'discard_all' : 'weights_offloaded';
        for (const s of SLEEP_STATES) this.set({ ...labels, sleep_state: s }, s === current ? 1 : 0);
      },
    });
    this.specDecoding = options.numSpeculativeTokens ? new SpecDecodingMetrics(registry, labels, options.numSpeculativeTokens) : null;
    this.kvTransfer = options.kvTransfer ? new KvTransferMetrics(registry, labels) : null;
    this.maxLoras = String(options.maxLoras ?? '');
    if (options.maxLoras !== undefined && options.maxLoras !== null) {
      // vLLM's labels only (no model_name / engine): one series per set of adapters, valued with
      // the time it was last seen; earlier sets keep their older times, readers take the newest.
      this.loraInfo = new Gauge({
        name: 'vllm:lora_requests_info',
        help: 'Running stats on lora requests.',
        labelNames: ['max_lora', 'waiting_lora_adapters', 'running_lora_adapters'],
        registers,
      });
    }
    const cacheConfigLabels = Object.keys(options.cacheConfigInfo());
    new Gauge({
      name: 'vllm:cache_config_info',
      help: 'Information of the LLMEngine CacheConfig',
      labelNames: cacheConfigLabels,
      registers,
      collect() {
        this.reset();
        this.set(options.cacheConfigInfo(), 1);
      },
    });

    this.promptTokens = counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.');
    this.generationTokens = counter('vllm:generation_tokens_total', 'Number of generation tokens processed.');
    this.preemptions = counter('vllm:num_preemptions_total', 'Cumulative number of preemption from the engine.');
    this.prefixQueries = counter('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.');
    this.prefixHits = counter('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.');
    this.requestSuccess = counter('vllm:request_success_total', 'Count of successfully processed requests.', ['finished_reason']);
    this.promptTokensCached = counter('vllm:prompt_tokens_cached_total', 'Number of cached prompt tokens (local + external).');
    this.promptTokensRecomputed = counter('vllm:prompt_tokens_recomputed_total', 'Number of cached tokens recomputed for forward pass.');
    this.promptTokensBySource = counter('vllm:prompt_tokens_by_source_total', 'Number of prompt tokens by source.', ['source']);
    for (const source of PROMPT_TOKEN_SOURCES) this.promptTokensBySource.inc({ ...labels, source }, 0);

    const lengthBuckets = buckets125(options.maxModelLen);
    this.iterationTokens = histogram('vllm:iteration_tokens_total', 'Histogram of number of tokens per engine_step.', ITERATION_TOKENS_BUCKETS);
    this.maxNumGenerationTokens = histogram('vllm:request_max_num_generation_tokens', 'Histogram of maximum number of requested generation tokens.', lengthBuckets);
    this.ttft = histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS);
    this.interToken = histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', INTER_TOKEN_BUCKETS);
    this.timePerOutputToken = histogram('vllm:request_time_per_output_token_seconds', 'Histogram of time_per_output_token_seconds per request.', INTER_TOKEN_BUCKETS);
    this.e2eLatency = histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', REQUEST_LATENCY_BUCKETS);
    this.queueTime = histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', REQUEST_LATENCY_BUCKETS);
    this.inferenceTime = histogram('vllm:request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', REQUEST_LATENCY_BUCKETS);
    this.prefillTime = histogram('vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', REQUEST_LATENCY_BUCKETS);
    this.decodeTime = histogram('vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', REQUEST_LATENCY_BUCKETS);
    this.requestPromptTokens = histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', lengthBuckets);
    this.requestGenerationTokens = histogram('vllm:request_generation_tokens', 'Number of generation tokens processed.', lengthBuckets);
    this.requestParamsN = histogram('vllm:request_params_n', 'Histogram of the n request parameter.', REQUEST_N_BUCKETS);
    this.requestParamsMaxTokens = histogram('vllm:request_params_max_tokens', 'Histogram of the max_tokens request parameter.', lengthBuckets);
    // Structured outputs (vLLM-style names; vLLM itself has none for these).
    this.grammarCompileTime = histogram(
      'vllm:structured_output_compile_time_seconds',
      'Histogram of structured-output grammar compile time in seconds (cache misses).',
      GRAMMAR_COMPILE_BUCKETS,
    );
    this.grammarCacheQueries = counter('vllm:structured_output_grammar_cache_queries_total', 'Structured-output grammar cache lookups (one per constrained request).');
    this.grammarCacheHits = counter('vllm:structured_output_grammar_cache_hits_total', 'Structured-output grammar cache hits.');

    // vLLM's multimodal cache counters, here the encoder cache's lookups by image hash.
    this.mmCacheQueries = counter('vllm:mm_cache_queries_total', 'Multi-modal cache queries, in terms of number of queried items.');
    this.mmCacheHits = counter('vllm:mm_cache_hits_total', 'Multi-modal cache hits, in terms of number of cached items.');

    // Zero-valued series exist from the start, as in vLLM, so dashboards see them before traffic.
    const counters = [this.promptTokens, this.generationTokens, this.preemptions, this.prefixQueries, this.prefixHits, this.promptTokensCached, this.promptTokensRecomputed];
    for (const c of [...counters, this.grammarCacheQueries, this.grammarCacheHits, this.mmCacheQueries, this.mmCacheHits]) c.inc(labels, 0);
    for (const reason of ['stop', 'length', 'abort', 'error', 'repetition']) this.requestSuccess.inc({ ...labels, finished_reason: reason }, 0);
  }

  /** Applies one engine step's stats. */
  record(stats: IterationStats): void {
    const labels = this.labels;
    // Only what moved: each inc hashes and checks the labels, and most counters stay at zero in a
    // decode step (their series exist from the start, see the constructor).
    const add = (counter: Counter<string>, value: number | undefined): void => {
      if (value) counter.inc(labels, value);
    };
    add(this.promptTokens, stats.promptTokens);
    add(this.generationTokens, stats.generationTokens);
    add(this.preemptions, stats.numPreemptions);
    add(this.prefixQueries, stats.prefixCacheQueries);
    add(this.prefixHits, stats.prefixCacheHits);
    add(this.promptTokensCached, stats.promptTokensCached);
    add(this.promptTokensRecomputed, stats.promptTokensRecomputed);
    const sources = stats.promptTokensBySource;
    if (sources) {
      const values = [sources.localCompute, sources.localCacheHit, sources.externalKvTransfer];
      PROMPT_TOKEN_SOURCES.forEach((source, i) => {
        if (values[i] > 0) this.promptTokensBySource.inc({ ...labels, source }, values[i]);
      });
    }
    if (stats.promptTokens + stats.generationTokens > 0) {
      this.iterationTokens.observe(labels, stats.promptTokens + stats.generationTokens);
    }
    for (const t of stats.timeToFirstTokens) this.ttft.observe(labels, t);
    for (const t of stats.interTokenLatencies) this.interToken.observe(labels, t);
    for (const f of stats.finished) this.recordFinished(f);
    for (const t of stats.grammarCompileSeconds ?? []) this.grammarCompileTime.observe(labels, t);
    const hits = stats.grammarCacheHits ?? 0;
    add(this.grammarCacheQueries, hits + (stats.grammarCacheMisses ?? 0));
    add(this.grammarCacheHits, hits);
    add(this.mmCacheQueries, stats.mmCacheQueries);
    add(this.mmCacheHits, stats.mmCacheHits);
    if (stats.specDecoding) this.specDecoding?.record(stats.specDecoding);
    if (stats.kvTransfer) this.kvTransfer?.record(stats.kvTransfer);
    this.recordLoraInfo();
  }

  /** Every engine step, as vLLM's record() does with the scheduler stats: the adapters of that step, stamped with the time. */
  private recordLoraInfo(): void {
    if (!this.loraInfo) return;
    const stats = this.engine.stats();
    this.loraInfo.setToCurrentTime({
      max_lora: this.maxLoras,
      waiting_lora_adapters: (stats.waitingLoraAdapters ?? []).join(','),
      running_lora_adapters: (stats.runningLoraAdapters ?? []).join(','),
    });
  }

  private recordFinished(f: FinishedRequestStats): void {
    const labels = this.labels;
    this.requestSuccess.inc({ ...labels, finished_reason: f.finishReason });
    this.e2eLatency.observe(labels, f.e2eLatency);
    this.queueTime.observe(labels, f.queueTime);
    this.inferenceTime.observe(labels, f.inferenceTime);
    this.prefillTime.observe(labels, f.prefillTime);
    this.decodeTime.observe(labels, f.decodeTime);
    this.requestPromptTokens.observe(labels, f.promptTokens);
    this.requestGenerationTokens.observe(labels, f.generationTokens);
    this.requestParamsN.observe(labels, f.n);
    this.maxNumGenerationTokens.observe(labels, f.maxGenerationTokens);
    if (f.maxTokensParam !== null) this.requestParamsMaxTokens.observe(labels, f.maxTokensParam);
    // vLLM: mean time per output token = decode time / (generated tokens - 1).
    if (f.generationTokens > 1) this.timePerOutputToken.observe(labels, f.decodeTime / (f.generationTokens - 1));
  }
}
