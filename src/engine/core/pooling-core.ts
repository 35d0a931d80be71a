// The engine core of a pooling model (vLLM's encode path): the same Scheduler and token budget
// as generation, but no KV cache is kept. Each step takes the waiting sequences that fit the
// budget whole, runs them as one packed forward (the runner pads and masks), and finishes them
// with their pooled vector. Runs in the engine worker like EngineCore (see core-host.ts).

import { RequestValidationError } from '../errors';
import type { EncodeRequest, FinishedRequestStats, IterationStats, SchedulerStats } from '../types';
import type { PoolingRunner } from '../../model/types';
import { nowMs } from '../clock';
import { emptyIterationStats } from './engine-core';
import { NoKvBlocks } from './no-kv-blocks';
import type { PooledResult } from './protocol';
import { Scheduler, type SchedulePlan, type SchedulingPolicy } from './scheduler';
import { Sequence } from './sequence';
import { assertEncodeInvariants } from './validate-request';

export interface PoolingCoreConfig {
  maxModelLen: number;
  maxNumSeqs: number;
  /** At least maxModelLen: a sequence that never fits whole would never run. */
  maxNumBatchedTokens: number;
  schedulingPolicy: SchedulingPolicy;
  vocabSize: number;
  /** Reported in scheduler stats (vllm:cache_config_info); no block is ever used. */
  blockSize: number;
}

export interface PoolingCoreListener {
  onStep(pooled: PooledResult[], stats: SchedulerStats, iteration: IterationStats): void;
}

interface PoolingState {
  request: EncodeRequest;
  seq: Sequence;
  arrivalMs: number;
}

export class PoolingCore {
  readonly scheduler: Scheduler;
  private readonly requests = new Map<string, PoolingState>();
  private readonly pendingAborts = new Set<string>();
  private stepping = false;

  constructor(
    private runner: PoolingRunner,
    readonly config: PoolingCoreConfig,
    private readonly listener: PoolingCoreListener,
  ) {
    if (config.maxNumBatchedTokens < config.maxModelLen) {
      throw new Error(`max_num_batched_tokens (${config.maxNumBatchedTokens}) must be at least max_model_len (${config.maxModelLen}) for a pooling model`);
    }
    this.scheduler = new Scheduler(
      // No KV is kept between steps, so no prefill may stay partial: a sequence runs whole or waits.
      {
        maxNumSeqs: config.maxNumSeqs,
        maxNumBatchedTokens: config.maxNumBatchedTokens,
        policy: config.schedulingPolicy,
        partialPrefills: { maxNumPartialPrefills: 0, maxLongPartialPrefills: 0, longPrefillTokenThreshold: 0 },
      },
      new NoKvBlocks(),
    );
  }

  abortAll(): void {
    this.abort([...this.requests.keys()]);
  }

  /** Swaps in a new runner (after sleep); only when no request is in flight. */
  replaceRunner(runner: PoolingRunner): void {
    if (this.requests.size > 0) throw new Error('cannot replace the runner while requests are in flight');
    this.runner = runner;
  }

  hasWork(): boolean {
    return this.scheduler.hasWork() || this.pendingAborts.size > 0;
  }

  /** Queues a request; throws EngineInvariantError (nothing queued) when it breaks a rule serving checks. */
  addRequest(request: EncodeRequest): void {
    assertEncodeInvariants(request, this.config);
    if (this.requests.has(request.requestId)) {
      throw new RequestValidationError(`Request id ${request.requestId} is already running.`, 'request_id');
    }
    const n = request.promptTokenIds.length;
    const seq = new Sequence(`${request.requestId}#0`, request.requestId, 0, request.promptTokenIds, n, request.priority ?? 0, null, true);
    this.requests.set(request.requestId, { request, seq, arrivalMs: request.arrivalTime ?? nowMs() });
    this.scheduler.addSequence(seq);
  }

  /** Drops the requests (after the running step, if any); they count as aborted. */
  abort(requestIds: readonly string[]): void {
    for (const id of requestIds) if (this.requests.has(id)) this.pendingAborts.add(id);
    if (!this.stepping) this.flushAborts();
  }

  stats(): SchedulerStats {
    return { numRunning: this.scheduler.numRunning, numWaiting: this.scheduler.numWaiting, kvCacheUsage: 0, numBlocks: 0, blockSize: this.config.blockSize };
  }

  async step(): Promise<void> {
    this.flushAborts();
    const plan = this.scheduler.schedule();
    if (plan.scheduled.length === 0) return;
    const states = plan.scheduled.map(({ seq }) => this.requests.get(seq.requestId)!);
    let vectors: Float32Array[] | null = null;
    let failure: string | null = null;
    this.stepping = true;
    try {
      vectors = await this.runner.encode(states.map((s) => ({ tokens: s.request.promptTokenIds, tokenTypeIds: s.request.tokenTypeIds })));
    } catch (err) {
      failure = `model step failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    this.stepping = false;
    this.finishStep(plan, states, vectors, failure);
    this.flushAborts();
  }

  private finishStep(plan: SchedulePlan, states: PoolingState[], vectors: Float32Array[] | null, failure: string | null): void {
    const now = nowMs();
    const iteration = emptyIterationStats();
    const pooled: PooledResult[] = [];
    this.scheduler.updateFromOutput(plan, new Map());
    states.forEach((state, i) => {
      const id = state.request.requestId;
      if (this.pendingAborts.has(id)) return; // flushAborts ends it
      pooled.push(vectors ? { requestId: id, data: vectors[i] } : { requestId: id, error: failure! });
      iteration.promptTokens += state.request.promptTokenIds.length;
      iteration.timeToFirstTokens.push((now - state.arrivalMs) / 1000);
      iteration.finished.push(finishedStats(state, vectors ? 'stop' : 'error', now));
      this.finish(id);
    });
    this.listener.onStep(pooled, this.stats(), iteration);
  }

  private flushAborts(): void {
    if (this.pendingAborts.size === 0) return;
    const iteration = emptyIterationStats();
    const now = nowMs();
    for (const id of this.pendingAborts) {
      const state = this.requests.get(id);
      if (!state) continue;
      iteration.finished.push(finishedStats(state, 'abort', now));
      this.finish(id);
    }
    this.pendingAborts.clear();
    this.listener.onStep([], this.stats(), iteration);
  }

  private finish(requestId: string): void {
    const state = this.requests.get(requestId);
    if (!state) return;
    this.requests.delete(requestId);
    this.scheduler.finishSequences([state.seq.seqId]);
  }
}

function finishedStats(state: PoolingState, reason: FinishedRequestStats['finishReason'], now: number): FinishedRequestStats {
  const scheduled = state.seq.firstScheduledAt ?? now;
  return {
    finishReason: reason,
    e2eLatency: (now - state.arrivalMs) / 1000,
    queueTime: Math.max(0, scheduled - state.arrivalMs) / 1000,
    prefillTime: Math.max(0, now - scheduled) / 1000,
    decodeTime: 0,
    inferenceTime: Math.max(0, now - scheduled) / 1000,
    promptTokens: state.request.promptTokenIds.length,
    generationTokens: 0,
    maxTokensParam: null,
    n: 1,
    maxGenerationTokens: 0,
  };
}
