// Builds the engine core over a loaded model — EngineCore (runner, KV budget from kv-plan.ts,
// sampling) for generation models, PoolingCore (no KV) for pooling models — drives its step loop,
// and runs the control operations (sleep / wake_up / reset_prefix_cache). The same host
// runs inside the engine worker thread and in-process (useWorker=false).

import * as os from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createRunner as createModelRunner, kvPoolGroups, resolveKvCacheDtype } from '../../model/runner';
import { poolsDifferFromOne } from '../../model/runner/kv-pools';
import { createPoolingRunner } from '../../model/runner/pooling-runner';
import { wrongRunnerError } from '../errors';
import { seedGlobalSampler } from '../sampling';
import { generatesTokens, type LoadedModel, type ModelArchConfig, type ModelRunner, type RunnerOptions } from '../../model/types';
import { encoderSpecOf } from '../../model/encoder-spec';
import type { SpeculativeConfig } from '../speculative/speculative-config';
import type { EncodeRequest, EngineOptions, EngineRequest, LoraRequest, SleepLevel, SleepMode } from '../types';
import { loadModel } from '../../model/load-model';
import type { CoreEvent, CoreInfo, EngineCommands } from './protocol';
import { CompletionProcessorFactory } from './completion-processor';
import { describePools, planKvCache } from './kv-plan';
import { capacityBlocks } from './hybrid-kv-cache';
import { EngineCore } from './engine-core';
import { startGrammarEngines, type GrammarEngines } from './grammar-admission';
import { PoolingCore } from './pooling-core';
import type { LoraLoader } from './lora-adapters';
import { createProposer } from '../speculative/proposers';
import { Speculation } from './speculation';
import { KvEvents } from '../kv-events/kv-events';
import { cachedBlocksOf, type KvCachedBlocks } from '../kv-events/kv-event-groups';
import { publishesKvEvents } from '../kv-events/kv-events-config';
import { createKvConnector } from '../kv-transfer/connectors';
import { isProducer } from '../kv-transfer/kv-transfer-config';
import type { KvTransferAgent } from './kv-transfer-agent';
import { ImageEmbedder } from './image-embedder';
import { checkRunsFitBudget } from './image-runs';
import { imagePlaceholderTokens } from '../../model/vision/preprocess-image';
import { EncoderCache } from './encoder-cache';

/** What tests may replace: how a generation runner is built, how LoRA adapter files are read. */
export interface CoreSeams {
  createRunner?: typeof createModelRunner;
  loraLoader?: LoraLoader;
}

/**
 * Every core. Idle intra-op threads sleep (allow_spinning 0, session.ts), so the HTTP thread gets
 * a core between steps; VLLM_CPU_OMP_THREADS_BIND picks fewer. Two threads win everywhere but on
 * stories260K at 32 streams, where one would cost its single stream (docs/perf/core-host.md).
 */
export function defaultIntraOpThreads(): number {
  return os.availableParallelism();
}

interface Disposable {
  dispose(): Promise<void>;
}

/** What the host drives: a generation core (KV cache, streams) or a pooling core (neither). */
type HostedCore = EngineCore | PoolingCore;

/** Builds a runner for `model` and hands it to the core (wakeUp). */
type AttachRunner = (model: LoadedModel) => Promise<Disposable>;

export class EngineCoreHost implements EngineCommands {
  private stopped = false;
  private wake: (() => void) | null = null;
  private readonly loop: Promise<void>;
  /** null while asleep. */
  private runner: Disposable | null;
  /** Kept through a level-1 sleep to rebuild the session; dropped (reloaded from disk) at level 2. */
  private model: LoadedModel | null;
  /** False for a model the host owns (start's ownsModel): every wake_up reloads from disk and lets go again. */
  private holdModel = true;
  private idleWaiters: Array<() => void> = [];
  /** --speculative-config: the proposer (a draft model's runner) to dispose with the host. */
  private speculation: Speculation | null = null;
  /** --kv-events-config: publishes the prefix cache's changes once per step. */
  private kvEvents: KvEvents | null = null;
  /** A vision-language model's image encoder, released with the host. */
  private images: ImageEmbedder | null = null;

  private constructor(
    readonly info: CoreInfo,
    private readonly core: HostedCore,
    private readonly attachRunner: AttachRunner,
    runner: Disposable,
    model: LoadedModel,
    private readonly options: EngineOptions,
    private readonly emit: (event: CoreEvent) => void,
    private readonly grammars: GrammarEngines | null,
  ) {
    this.runner = runner;
    this.model = model;
    if (core instanceof EngineCore) core.onWork = () => this.wake?.();
    this.loop = this.run();
  }

  /** Creates the runner and starts the step loop; events go to `emit`. */
  /**
   * `ownsModel`: the caller loaded `model` from `options.load` and keeps no other use for it. The
   * runner then lets go of each weight once the session holding its own copy is built, and the
   * host keeps no reference: otherwise the loader's copy stays a second one for the server's
   * whole life (1.1 GB for a 1.1B Q8_0 model) and raises the start-up peak. wake_up then reloads
   * from disk at level 1 as at level 2.
   */
  static async start(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void, ownsModel = false, seams: CoreSeams = {}): Promise<EngineCoreHost> {
    const host = generatesTokens(model.output)
      ? await EngineCoreHost.startGeneration(model, options, emit, ownsModel, seams)
      : await EngineCoreHost.startPooling(model, options, emit);
    if (ownsModel) {
      host.holdModel = false;
      host.model = null;
    }
    return host;
  }

  private static async startGeneration(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void, ownsModel: boolean, seams: CoreSeams): Promise<EngineCoreHost> {
    const createRunner = seams.createRunner ?? createModelRunner;
    const kvCacheDtype = resolveKvCacheDtype(model, options.kvCacheDtype ?? 'auto');
    const plan = planKvCache(model, { ...options, kvCacheDtype }, undefined, kvPoolGroups(model));
    seedGlobalSampler(options.seed ?? 0);
    const runnerOptions: RunnerOptions = {
      blockSize: options.blockSize,
      numBlocks: plan.numBlocks,
      device: options.device,
      intraOpThreads: options.intraOpThreads ?? defaultIntraOpThreads(),
      dtype: options.dtype ?? 'auto',
      kvCacheDtype,
      maxModelLen: plan.maxModelLen,
      kvPools: poolsDifferFromOne(plan.pools) ? plan.pools : undefined,
      consumeWeights: ownsModel,
      lora: options.lora ? { maxLoras: options.lora.maxLoras, maxRank: options.lora.maxRank } : undefined,
      // A producer's socket thread copies pinned blocks out itself, without waiting for a step to end.
      sharedKvCache: options.kvTransfer ? isProducer(options.kvTransfer) : false,
    };
    const runner = await createRunner(model, runnerOptions);
    console.info(
      `[engine] KV cache: ${describePools(plan.pools)} of ${options.blockSize} tokens, ${kvCacheDtype} ` +
        `(${(plan.totalBytes / 2 ** 20).toFixed(1)} MiB), max_model_len ${plan.maxModelLen}`,
    );
    console.info(`[engine] forward pass: ${runnerOptions.intraOpThreads} thread${runnerOptions.intraOpThreads === 1 ? '' : 's'}`);
    const speculation = options.speculative ? await startSpeculation(options.speculative, runner, runnerOptions, plan.maxModelLen, options, model) : undefined;
    const images = await startImageEmbedder(model, options, runnerOptions.intraOpThreads);
    const config = {
      speculation,
      images,
      maxModelLen: plan.maxModelLen,
      maxNumSeqs: options.maxNumSeqs,
      maxNumBatchedTokens: options.maxNumBatchedTokens,
      schedulingPolicy: options.schedulingPolicy,
      enablePrefixCaching: options.enablePrefixCaching,
      partialPrefills: options.partialPrefills,
      lora: options.lora,
      kvTransfer: options.kvTransfer,
    };
    const processors = new CompletionProcessorFactory({
      vocabSize: model.config.vocabSize,
      eosTokenIds: model.eosTokenIds,
      maxModelLen: plan.maxModelLen,
      tokenizer: model.tokenizer,
    });
    // Structured outputs: a grammar worker thread with xgrammar's view of the vocabulary, built
    // once per model (none without a tokenizer).
    const grammars = model.tokenizer ? await startGrammarEngines(model.tokenizer, model.config.vocabSize, model.eosTokenIds, options.structuredOutputsLimits) : null;
    const core = new EngineCore(runner, config, processors, {
      onStep: (outputs, stats, iteration) => emit({ type: 'step', outputs, stats, iteration }),
      onReject: (requestId, err) => emit(rejection(requestId, err)),
    }, { engines: grammars, defaults: options.structuredOutputs, limits: options.structuredOutputsLimits }, seams.loraLoader);
    const info: CoreInfo = { numBlocks: plan.numBlocks, blockSize: options.blockSize, maxModelLen: plan.maxModelLen, kvCapacityBlocks: capacityBlocks(runner, plan.maxModelLen) };
    const attachRunner: AttachRunner = async (m) => {
      const next = await createRunner(m, runnerOptions);
      core.replaceRunner(next);
      return next;
    };
    // Before the step loop starts (the host's constructor): the first step's events are published,
    // and the connector serves pulls from the first finished prefill.
    let kvEvents: KvEvents | null;
    try {
      if (core.kvTransfer) await startKvConnector(core.kvTransfer, model.config, options, kvCacheDtype);
      kvEvents = await KvEvents.start(options.kvEvents, core.kv);
    } catch (err) {
      await Promise.all([runner.dispose(), speculation?.proposer.dispose(), images?.release(), grammars?.client.close(), grammars?.trials.close(), core.kvTransfer?.close()]);
      throw err;
    }
    const host = new EngineCoreHost(info, core, attachRunner, runner, model, options, emit, grammars);
    host.speculation = speculation ?? null;
    host.images = images ?? null;
    host.kvEvents = kvEvents;
    return host;
  }

  /** No KV cache: max_model_len is the model's (or the flag's), and one step holds at least one whole sequence. */
  private static async startPooling(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void): Promise<EngineCoreHost> {
    if (options.lora) throw new Error('--enable-lora: LoRA adapters apply to generation models; pooling models run without them here');
    if (options.speculative) throw new Error('--speculative-config: speculative decoding applies to generation models, not pooling models');
    if (publishesKvEvents(options.kvEvents)) console.warn('[kv-events] a pooling model keeps no KV cache between requests: no KV cache events are published');
    if (options.kvTransfer) throw new Error('--kv-transfer-config: KV transfer applies to generation models; pooling models keep no KV cache');
    const maxModelLen = options.maxModelLen ?? model.contextLength;
    if (maxModelLen > model.contextLength) {
      throw new Error(`max_model_len ${maxModelLen} is larger than the model's context length ${model.contextLength}.`);
    }
    const runnerOptions = { device: options.device, intraOpThreads: options.intraOpThreads ?? defaultIntraOpThreads(), dtype: options.dtype };
    const runner = await createPoolingRunner(model, runnerOptions);
    const budget = Math.max(options.maxNumBatchedTokens, maxModelLen);
    console.info(`[engine] pooling model: no KV cache, max_model_len ${maxModelLen}, ${budget} tokens per step`);
    const core = new PoolingCore(
      runner,
      { maxModelLen, maxNumSeqs: options.maxNumSeqs, maxNumBatchedTokens: budget, schedulingPolicy: options.schedulingPolicy, vocabSize: model.config.vocabSize, blockSize: options.blockSize },
      { onStep: (pooled, stats, iteration) => emit({ type: 'step', outputs: [], pooled, stats, iteration }) },
    );
    const info: CoreInfo = { numBlocks: 0, blockSize: options.blockSize, maxModelLen };
    const attachRunner: AttachRunner = async (m) => {
      const next = await createPoolingRunner(m, runnerOptions);
      core.replaceRunner(next);
      return next;
    };
    return new EngineCoreHost(info, core, attachRunner, runner, model, options, emit, null);
  }

  async sleep({ level, mode }: { level: SleepLevel; mode: SleepMode }): Promise<void> {
    if (mode === 'abort') this.core.abortAll();
    this.wake?.();
    await this.idle();
    const runner = this.runner;
    this.runner = null;
    if (level === 2) this.model = null;
    await runner?.dispose();
    await this.speculation?.proposer.sleep?.();
    // Adapters stay loaded (host memory) and go to the runner wake_up builds.
    if (this.core instanceof EngineCore) this.core.loras?.attach(null);
    this.clearPrefixCache();
  }

  async wakeUp(): Promise<void> {
    if (this.runner) return;
    const model = this.model ?? (await loadModel({ ...this.options.load, loadWeights: true }));
    this.runner = await this.attachRunner(model);
    this.kvEvents?.flush();
    await this.speculation?.proposer.wakeUp?.();
    if (this.holdModel) this.model = model;
    this.wake?.();
  }

  resetPrefixCache(): Promise<void> {
    this.clearPrefixCache();
    return Promise.resolve();
  }

  kvCachedBlocks(): Promise<KvCachedBlocks> {
    return Promise.resolve(this.core instanceof EngineCore ? cachedBlocksOf(this.core.kv) : { groups: [] });
  }

  async loadLora(request: LoraRequest): Promise<void> {
    await this.generationCore().loadLora(request);
  }

  unloadLora({ id }: { id: number }): Promise<void> {
    if (this.core instanceof EngineCore) this.core.unloadLora(id);
    return Promise.resolve();
  }

  /** Nothing is cached between pooling requests. */
  private clearPrefixCache(): void {
    if (this.core instanceof EngineCore) this.core.kv.resetPrefixCache();
    this.kvEvents?.flush();
  }

  /** Resolves once no request is left in the core. */
  private idle(): Promise<void> {
    if (!this.core.hasWork()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  add(request: EngineRequest): void {
    this.accept(request.requestId, () => this.generationCore().addRequest(request));
  }

  encode(request: EncodeRequest): void {
    this.accept(request.requestId, () => this.poolingCore().addRequest(request));
  }

  /** Queues a request, or tells the frontend why not (RequestValidationError / EngineInvariantError there). */
  private accept(requestId: string, queue: () => void): void {
    try {
      queue();
    } catch (err) {
      this.emit(rejection(requestId, err));
      return;
    }
    this.wake?.();
  }

  abort(requestIds: string[]): void {
    this.core.abort(requestIds);
    this.wake?.();
  }

  /** A pooling request answers once: there is no stream to hold back. */
  pause(requestIds: string[]): void {
    if (this.core instanceof EngineCore) this.core.pause(requestIds);
  }

  resume(requestIds: string[]): void {
    if (this.core instanceof EngineCore) this.core.resume(requestIds);
    this.wake?.();
  }

  /** The generation core, or the error a pooling model answers a generation request with. */
  private generationCore(): EngineCore {
    if (!(this.core instanceof EngineCore)) throw wrongRunnerError('generate');
    return this.core;
  }

  private poolingCore(): PoolingCore {
    if (!(this.core instanceof PoolingCore)) throw wrongRunnerError('encode');
    return this.core;
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await this.runner?.dispose();
    await this.speculation?.proposer.dispose();
    await this.images?.release();
    await Promise.all([this.grammars?.client.close(), this.grammars?.trials.close(), this.kvEvents?.close()]);
    if (this.core instanceof EngineCore) await this.core.kvTransfer?.close();
  }

  /**
   * The step loop. It goes straight on to the next step after emitting one, without waiting for
   * the HTTP thread to take the output: where a request's time and a step's CPU go, and the
   * scheduling variants measured and not taken, are in docs/perf/core-host.md.
   */
  private async run(): Promise<void> {
    try {
      while (!this.stopped) {
        if (!this.core.hasWork()) {
          for (const resolve of this.idleWaiters.splice(0)) resolve();
        }
        if (!this.core.hasWork() || this.runner === null) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          this.wake = null;
          continue;
        }
        await this.core.step();
        this.kvEvents?.flush();
        // Lets add/abort messages in between steps even when a step did no async work.
        await yieldToEventLoop();
      }
    } catch (err) {
      this.stopped = true;
      this.emit({ type: 'dead', error: `engine core failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}` });
    }
  }
}

/** Builds the --speculative-config proposer; refused for encoder-decoder models (nothing drafts their decoder). */
/**
 * A vision-language model's encoder step: the tower built once here, where the weights are, and
 * the encoder cache of --mm-processor-cache-gb. None for a text model (requests with images are
 * refused), or for one loaded without weights (nothing to encode with).
 */
async function startImageEmbedder(model: LoadedModel, options: EngineOptions, intraOpThreads: number | undefined): Promise<ImageEmbedder | undefined> {
  const vision = model.vision;
  if (!vision || !vision.weights) return undefined;
  const encoder = await vision.createEncoder(intraOpThreads ? { intraOpThreads } : {});
  if (encoder.hiddenSize !== model.config.hiddenSize) {
    await encoder.release();
    throw new Error(`the image encoder of ${vision.source} gives rows of ${encoder.hiddenSize}, the language model takes ${model.config.hiddenSize}`);
  }
  if (vision.bidirectionalImages) {
    console.info('[engine] Forcing --disable_chunked_mm_input for models with multimodal-bidirectional attention.');
    try {
      // Gemma 3, the one such family, gives every image the same count, whatever its size.
      checkRunsFitBudget(imagePlaceholderTokens(vision.processor, 1, 1), options.maxNumBatchedTokens);
    } catch (err) {
      await encoder.release();
      throw err;
    }
  }
  const bytes = options.mmProcessorCacheBytes ?? DEFAULT_MM_CACHE_BYTES;
  console.info(`[engine] image encoder: ${vision.family} from ${vision.source}, encoder cache ${(bytes / 2 ** 30).toFixed(2)} GiB`);
  return new ImageEmbedder(vision, encoder, bytes > 0 ? new EncoderCache(bytes) : null);
}

/** vLLM's --mm-processor-cache-gb default, 4 GiB. */
const DEFAULT_MM_CACHE_BYTES = 4 * 2 ** 30;

async function startSpeculation(config: SpeculativeConfig, runner: ModelRunner, runnerOptions: RunnerOptions, maxModelLen: number, options: EngineOptions, model: LoadedModel): Promise<Speculation> {
  if (encoderSpecOf(model.config)) throw new Error('--speculative-config: speculative decoding is not supported for encoder-decoder models');
  const proposer = await createProposer({
    config,
    target: runner,
    runnerOptions,
    maxModelLen,
    maxNumSeqs: options.maxNumSeqs,
    targetTokenizer: model.tokenizer,
    load: options.load,
    maxNumBatchedTokens: options.maxNumBatchedTokens,
  });
  const what = config.method === 'ngram' ? `prompt lookup of ${config.promptLookupMin}..${config.promptLookupMax}-grams` : `draft model ${config.model}`;
  console.info(`[engine] speculative decoding: ${what}, ${config.numSpeculativeTokens} tokens per step`);
  return new Speculation(config, proposer, maxModelLen);
}

/** Builds the --kv-transfer-config connector over the runner's KV blocks and, on a producer, starts listening. */
async function startKvConnector(agent: KvTransferAgent, runner: ModelArchConfig, options: EngineOptions, kvCacheDtype: string): Promise<void> {
  const config = options.kvTransfer!;
  const wildcard = options.serverHost === undefined || options.serverHost === null || options.serverHost === '' || options.serverHost === '0.0.0.0' || options.serverHost === '::';
  const connector = createKvConnector(config.connector, {
    config,
    shape: { num_layers: runner.numLayers, num_kv_heads: runner.numKvHeads, head_dim: runner.headDim, block_size: options.blockSize, kv_dtype: kvCacheDtype, pools: [{ layers: runner.numLayers, window: 0 }] },
    blocks: agent.blocks,
    defaultHost: wildcard ? '127.0.0.1' : options.serverHost!,
    release: (requestId, reason) => agent.release(requestId, reason),
  });
  agent.attach(connector);
  if (isProducer(config)) await connector.start();
}

function rejection(requestId: string, err: unknown): CoreEvent {
  const e = err as Error & { param?: string | null };
  return { type: 'rejected', requestId, message: e.message, param: e.param ?? null, name: e.name };
}
