// The HTTP thread's side of the engine (vLLM AsyncLLM): checks what only the engine knows (KV
// capacity, bad words against the tokenizer, a duplicate running id, room under
// --max-num-queued-reqs), forwards requests to the core, routes the core's outputs to each
// request's stream (pausing a request whose consumer falls behind), and turns client
// disconnects into aborts. It never touches the model.

import { EngineDeadError, EngineInvariantError, EngineOverloadedError, RequestValidationError } from './errors';
import { encodeBadWords } from './sampling';
import { OutputStream } from './output-stream';
import type { CoreConnection, CoreEvent } from './core/protocol';
import { checkFitsKvCache, engineLimits, type EngineLimits } from './core/validate-request';
import type { EngineClient, EngineHealth, EngineOptions, EngineRequest, IterationStats, RequestOutput, SchedulerStats, TextProcessor } from './types';
import type { ChatTemplate, GenerationDefaults, LoadedModel, ModelArchConfig, Tokenizer } from '../model/types';

/** What an overloaded server tells clients to wait before retrying, in seconds. */
const OVERLOADED_RETRY_AFTER_SECONDS = 1;

export class EngineFrontend implements EngineClient {
  readonly modelConfig: ModelArchConfig;
  readonly maxModelLen: number;
  readonly maxNumSeqs: number;
  readonly tokenizer: Tokenizer | null;
  readonly chatTemplate: ChatTemplate | null;
  readonly eosTokenIds: number[];
  readonly generationDefaults: GenerationDefaults;
  private readonly limits: EngineLimits;
  private readonly streams = new Map<string, OutputStream>();
  private readonly listeners = new Set<(stats: IterationStats) => void>();
  private latestStats: SchedulerStats;
  private deadError: string | null = null;
  private connection: CoreConnection | null = null;
  private readonly maxQueuedSequences: number | null;
  /** Sequences of the requests in flight (n or best_of each), admitted and not yet finished. */
  private queuedSequences = 0;

  constructor(
    model: LoadedModel,
    options: Pick<EngineOptions, 'maxNumSeqs' | 'schedulingPolicy' | 'maxNumQueuedReqs'>,
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
    this.limits = engineLimits(info, options, model.config.vocabSize);
    this.maxQueuedSequences = options.maxNumQueuedReqs ?? null;
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
  }

  /**
   * Refuses `sequences` more sequences when the engine cannot take them now: 503
   * (EngineOverloadedError) past --max-num-queued-reqs, 400 when they alone exceed it. The
   * serving layer asks before tokenizing; generate() asks again and counts them in.
   */
  ensureCapacity(sequences: number): void {
    const max = this.maxQueuedSequences;
    if (max === null) return;
    if (sequences > max) {
      throw new RequestValidationError(
        `This request needs ${sequences} sequences, more than the server holds at once (--max-num-queued-reqs ${max}).`,
        null,
      );
    }
    if (this.queuedSequences + sequences > max) {
      throw new EngineOverloadedError(
        `The server is overloaded: ${this.queuedSequences} sequences are queued or running (--max-num-queued-reqs ${max}). Retry later.`,
        OVERLOADED_RETRY_AFTER_SECONDS,
      );
    }
  }

  async *generate(request: EngineRequest, signal?: AbortSignal): AsyncIterable<RequestOutput> {
    const connection = this.liveConnection();
    checkFitsKvCache(request, this.limits);
    if (request.params.bad_words.length > 0 && this.tokenizer) encodeBadWords(request.params.bad_words, this.tokenizer);
    const id = request.requestId;
    if (this.streams.has(id)) throw new RequestValidationError(`Request id ${id} is already running.`, 'request_id');
    const sequences = Math.max(request.params.n, request.params.best_of ?? 0);
    this.ensureCapacity(sequences);
    if (signal?.aborted) return;

    const stream = new OutputStream(request.promptTokenIds, {
      pause: () => this.connection?.pause([id]),
      resume: () => this.connection?.resume([id]),
    });
    this.streams.set(id, stream);
    this.queuedSequences += sequences;
    const onAbort = () => this.abort([id]);
    signal?.addEventListener('abort', onAbort, { once: true });
    let finished = false;
    try {
      connection.add({ ...request, arrivalTime: request.arrivalTime ?? Date.now() });
      while (!finished) {
        const output = await stream.next();
        finished = output.finished;
        yield output;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.streams.delete(id);
      this.queuedSequences -= sequences;
      // The consumer left early (client gone, or an error): stop the work and free its KV.
      if (!finished && this.deadError === null) connection.abort([id]);
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

  async shutdown(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    for (const stream of this.streams.values()) stream.fail(new EngineDeadError('engine is shutting down'));
    this.deadError ??= 'engine was shut down';
    await Promise.all([connection?.shutdown(), this.text?.shutdown?.()]);
  }

  private liveConnection(): CoreConnection {
    if (this.deadError !== null || !this.connection) throw new EngineDeadError(`engine is not running: ${this.deadError ?? 'not started'}`);
    return this.connection;
  }
}
