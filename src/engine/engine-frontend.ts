// The HTTP thread's side of the engine (vLLM AsyncLLM): checks what only the engine knows (KV
// capacity, bad words against the tokenizer, a duplicate running id), forwards requests
// to the core, routes the core's outputs to each request's stream, and turns client
// disconnects into aborts. It never touches the model.

import { EngineDeadError, EngineInvariantError, RequestValidationError } from './errors';
import { encodeBadWords } from './sampling';
import { OutputStream } from './output-stream';
import type { CoreConnection, CoreEvent } from './core/protocol';
import { checkFitsKvCache, engineLimits, type EngineLimits } from './core/validate-request';
import type { EngineClient, EngineHealth, EngineOptions, EngineRequest, IterationStats, RequestOutput, SchedulerStats, TextProcessor } from './types';
import type { ChatTemplate, GenerationDefaults, LoadedModel, ModelArchConfig, Tokenizer } from '../model/types';

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

  async *generate(request: EngineRequest, signal?: AbortSignal): AsyncIterable<RequestOutput> {
    const connection = this.liveConnection();
    checkFitsKvCache(request, this.limits);
    if (request.params.bad_words.length > 0 && this.tokenizer) encodeBadWords(request.params.bad_words, this.tokenizer);
    const id = request.requestId;
    if (this.streams.has(id)) throw new RequestValidationError(`Request id ${id} is already running.`, 'request_id');
    if (signal?.aborted) return;

    const stream = new OutputStream(request.promptTokenIds);
    this.streams.set(id, stream);
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
