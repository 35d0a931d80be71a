// The HTTP thread's side of the engine (vLLM AsyncLLM): checks what only the engine knows (KV
// capacity, bad words against the tokenizer, a duplicate running id, room under
// --max-num-queued-reqs), forwards requests to the core, routes the core's outputs to each
// request's stream (pausing a request whose consumer falls behind), and turns client
// disconnects into aborts. It never touches the model.

import type { VisionModel } from '../model/vision/vision-model';
import { EngineDeadError, EngineInvariantError, EngineSleepingError, RequestValidationError, wrongRunnerError } from './errors';
import { SequenceBudget } from './sequence-budget';
import { nowMs } from './clock';
import { encodeBadWords } from './sampling';
import { OutputStream } from './output-stream';
import type { CoreConnection, CoreEvent } from './core/protocol';
import type { KvCachedBlocks } from './kv-events/kv-event-groups';
import { checkFitsKvCache, checkLoraRequest, engineLimits, type EngineLimits } from './core/validate-request';
import type {
  EncodeRequest,
  EngineClient,
  EngineHealth,
  EngineOptions,
  EngineRequest,
  IterationStats,
  LoraEngineOptions,
  LoraRequest,
  PoolingRequestOutput,
  RequestOutput,
  SchedulerStats,
  SequenceReservation,
  SleepLevel,
  SleepMode,
  SleepState,
  TextProcessor,
} from './types';
import type { AudioFeatureConfig } from '../model/audio/feature-config';
import { encoderSpecOf } from '../model/encoder-spec';
import { generatesTokens, type ChatTemplate, type GenerationDefaults, type LoadedModel, type ModelArchConfig, type ModelOutput, type PoolerSettings, type Tokenizer } from '../model/types';

/** A pooling request waiting for its one result. */
interface PendingEncode {
  promptTokenIds: number[];
  resolve: (output: PoolingRequestOutput) => void;
  reject: (error: Error) => void;
}

export class EngineFrontend implements EngineClient {
  readonly modelConfig: ModelArchConfig;
  readonly maxModelLen: number;
  readonly maxNumSeqs: number;
  readonly tokenizer: Tokenizer | null;
  readonly chatTemplate: ChatTemplate | null;
  readonly eosTokenIds: number[];
  readonly generationDefaults: GenerationDefaults;
  readonly audioFeatures: AudioFeatureConfig | null;
  readonly vision: VisionModel | null;
  readonly modelOutput: ModelOutput;
  readonly pooler: PoolerSettings | null;
  readonly lora: LoraEngineOptions | null;
  private readonly limits: EngineLimits;
  private readonly streams = new Map<string, OutputStream>();
  private readonly encodes = new Map<string, PendingEncode>();
  private readonly listeners = new Set<(stats: IterationStats) => void>();
  private latestStats: SchedulerStats;
  private deadError: string | null = null;
  private connection: CoreConnection | null = null;
  /** Sequences of the requests in flight (n or best_of each) under --max-num-queued-reqs. */
  private readonly budget: SequenceBudget;
  private sleeping: SleepState = { sleeping: false, level: 0 };

  constructor(
    model: LoadedModel,
    options: Pick<EngineOptions, 'maxNumSeqs' | 'schedulingPolicy' | 'maxNumQueuedReqs' | 'lora'>,
    info: CoreConnection['info'],
    readonly text: (TextProcessor & { shutdown?(): Promise<void> }) | null = null,
  ) {
    this.modelConfig = model.config;
    this.maxModelLen = info.maxModelLen;
    this.maxNumSeqs = options.maxNumSeqs;
    this.tokenizer = model.tokenizer;
    this.chatTemplate = model.chatTemplate;
    this.eosTokenIds = model.eosTokenIds;
    this.generationDefaults = model.generationDefaults;
    this.audioFeatures = model.config.encoder?.features ?? null;
    this.vision = model.vision ?? null;
    this.modelOutput = model.output;
    this.pooler = model.pooler;
    this.lora = options.lora ?? null;
    this.limits = engineLimits(info, options, model.config.vocabSize, encoderSpecOf(model.config));
    this.budget = new SequenceBudget(options.maxNumQueuedReqs ?? null);
    this.latestStats = { numRunning: 0, numWaiting: 0, kvCacheUsage: 0, numBlocks: info.numBlocks, blockSize: info.blockSize };
  }

  /** Connects the core; events may arrive from then on through `handleEvent`. */
  attach(connection: CoreConnection): void {
    this.connection = connection;
  }

  handleEvent(event: CoreEvent): void {
    switch (event.type) {
      case 'step':
        this.latestStats = event.stats;
        for (const output of event.outputs) this.streams.get(output.requestId)?.push(output);
        for (const result of event.pooled ?? []) {
          const pending = this.encodes.get(result.requestId);
          if (!pending) continue;
          if ('data' in result) pending.resolve({ requestId: result.requestId, promptTokenIds: pending.promptTokenIds, data: result.data });
          else pending.reject(new Error(result.error));
        }
        for (const listener of this.listeners) {
          try {
            listener(event.iteration);
          } catch (err) {
            console.error('[engine] iteration listener failed:', err);
          }
        }
        break;
      case 'rejected': {
        const error =
          event.name === 'RequestValidationError'
            ? new RequestValidationError(event.message, event.param)
            : event.name === 'EngineInvariantError'
              ? new EngineInvariantError(event.message)
              : new Error(event.message);
        this.streams.get(event.requestId)?.fail(error);
        this.encodes.get(event.requestId)?.reject(error);
        break;
      }
      case 'dead':
        this.markDead(event.error);
        break;
    }
  }

  markDead(error: string): void {
    if (this.deadError !== null) return;
    this.deadError = error;
    console.error(`[engine] engine core is dead: ${error}`);
    for (const stream of this.streams.values()) stream.fail(new EngineDeadError(error));
    for (const pending of this.encodes.values()) pending.reject(new EngineDeadError(error));
  }

  /**
   * Refuses `sequences` more sequences when the engine cannot take them now: 503
   * (EngineOverloadedError) past --max-num-queued-reqs, 400 when they alone exceed it. The
   * serving layer asks before tokenizing; reserve() or generate() takes the room.
   */
  ensureCapacity(sequences: number, param: string | null = null): void {
    this.budget.check(sequences, param);
  }

  reserve(sequences: number, param: string | null = null): SequenceReservation {
    return this.budget.reserve(sequences, param);
  }

  async *generate(request: EngineRequest, signal?: AbortSignal, reservation?: SequenceReservation): AsyncIterable<RequestOutput> {
    const connection = this.liveConnection();
    if (!generatesTokens(this.modelOutput)) throw wrongRunnerError('generate');
    if (this.sleeping.sleeping) throw new EngineSleepingError();
    checkFitsKvCache(request, this.limits);
    checkLoraRequest(request, this.lora !== null);
    if (request.params.bad_words.length > 0 && this.tokenizer) encodeBadWords(request.params.bad_words, this.tokenizer);
    const id = request.requestId;
    if (this.streams.has(id)) throw new RequestValidationError(`Request id ${id} is already running.`, 'request_id');
    const sequences = Math.max(request.params.n, request.params.best_of ?? 0);
    if (signal?.aborted) return;
    const giveBack = this.budget.take(sequences, reservation);

    const stream = new OutputStream(request.promptTokenIds, request.params.output_kind, {
      pause: () => this.connection?.pause([id]),
      resume: () => this.connection?.resume([id]),
    });
    this.streams.set(id, stream);
    const onAbort = () => this.abort([id]);
    signal?.addEventListener('abort', onAbort, { once: true });
    let finished = false;
    try {
      connection.add({ ...request, arrivalTime: request.arrivalTime ?? nowMs() });
      while (!finished) {
        const output = await stream.next();
        finished = output.finished;
        yield output;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.streams.delete(id);
      giveBack();
      // The consumer left early (client gone, or an error): stop the work and free its KV.
      if (!finished && this.deadError === null) connection.abort([id]);
    }
  }

  async encode(request: EncodeRequest, signal?: AbortSignal, reservation?: SequenceReservation): Promise<PoolingRequestOutput> {
    const connection = this.liveConnection();
    if (this.modelOutput.kind === 'logits') throw wrongRunnerError('encode');
    if (this.sleeping.sleeping) throw new EngineSleepingError();
    const id = request.requestId;
    if (this.encodes.has(id) || this.streams.has(id)) throw new RequestValidationError(`Request id ${id} is already running.`, 'request_id');
    signal?.throwIfAborted();
    const giveBack = this.budget.take(1, reservation);
    let settled = false;
    const result = new Promise<PoolingRequestOutput>((resolve, reject) => {
      this.encodes.set(id, { promptTokenIds: request.promptTokenIds, resolve, reject });
    });
    // The client went away: the core drops the request (and frees its batch slot) at once.
    const onAbort = () => {
      if (!settled) this.encodes.get(id)?.reject(signal!.reason instanceof Error ? signal!.reason : new Error('request aborted'));
      this.abort([id]);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      connection.encode({ ...request, arrivalTime: request.arrivalTime ?? nowMs() });
      return await result;
    } finally {
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      this.encodes.delete(id);
      giveBack();
    }
  }

  abort(requestIds: string[]): void {
    if (this.connection && this.deadError === null && requestIds.length > 0) this.connection.abort(requestIds);
  }

  health(): EngineHealth {
    return this.deadError === null ? { alive: true } : { alive: false, error: this.deadError };
  }

  stats(): SchedulerStats {
    return { ...this.latestStats };
  }

  onIteration(listener: (stats: IterationStats) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async sleep(level: SleepLevel, mode: SleepMode): Promise<void> {
    const connection = this.liveConnection();
    // New requests are refused from now on; the core aborts or drains the ones in flight.
    const before = this.sleeping;
    this.sleeping = { sleeping: true, level };
    try {
      await connection.sleep({ level, mode });
    } catch (err) {
      this.sleeping = before;
      throw err;
    }
  }

  async wakeUp(): Promise<void> {
    if (!this.sleeping.sleeping) return;
    await this.liveConnection().wakeUp();
    this.sleeping = { sleeping: false, level: 0 };
  }

  sleepState(): SleepState {
    return { ...this.sleeping };
  }

  async loadLora(request: LoraRequest): Promise<void> {
    const connection = this.liveConnection();
    if (this.lora === null) throw new Error(`cannot load LoRA adapter '${request.name}': LoRA is not enabled (--enable-lora)`);
    await connection.loadLora(request);
  }

  async unloadLora(id: number): Promise<void> {
    const connection = this.liveConnection();
    if (this.lora === null) throw new Error(`cannot unload LoRA adapter ${id}: LoRA is not enabled (--enable-lora)`);
    await connection.unloadLora({ id });
  }

  async resetPrefixCache(): Promise<void> {
    await this.liveConnection().resetPrefixCache();
  }

  kvCachedBlocks(): Promise<KvCachedBlocks> {
    return this.liveConnection().kvCachedBlocks();
  }

  async shutdown(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    for (const stream of this.streams.values()) stream.fail(new EngineDeadError('engine is shutting down'));
    for (const pending of this.encodes.values()) pending.reject(new EngineDeadError('engine is shutting down'));
    this.deadError ??= 'engine was shut down';
    await Promise.all([connection?.shutdown(), this.text?.shutdown?.()]);
  }

  private liveConnection(): CoreConnection {
    if (this.deadError !== null || !this.connection) throw new EngineDeadError(`engine is not running: ${this.deadError ?? 'not started'}`);
    return this.connection;
  }
}
