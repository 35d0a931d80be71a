// The engine's step loop (vLLM V1 EngineCore.step): schedule → runner.step → sample →
// detokenize / stop-check → outputs. Requests join and leave the batch at step
// boundaries. Runs the same in a worker thread or in-process (see core-host.ts).

import { RequestValidationError } from '../errors';
import type { EngineRequest, IterationStats, RequestOutput, SchedulerStats } from '../types';
import type { ModelRunner, StepSequence } from '../../model/types';
import { nowMs } from './clock';
import type { CompletionProcessorFactory } from './completion-processor';
import { KvCacheManager } from './kv-cache-manager';
import { RequestState, type CompletionState } from './request-state';
import { Scheduler, type SchedulePlan, type SchedulingPolicy } from './scheduler';
import { Sequence } from './sequence';
import { assertRequestInvariants, effectiveMaxTokens, engineLimits, type EngineLimits } from './validate-request';

export interface EngineCoreConfig {
  maxModelLen: number;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  schedulingPolicy: SchedulingPolicy;
  enablePrefixCaching: boolean;
}

export interface EngineCoreListener {
  /**
   * Outputs of one step (or of an abort), the scheduler state after it and the step's stats,
   * in one call so a worker sends one message (one wake-up of the HTTP thread) per step.
   */
  onStep(outputs: RequestOutput[], stats: SchedulerStats, iteration: IterationStats): void;
}

interface SampleJob {
  state: RequestState;
  completion: CompletionState;
  seq: Sequence;
}

export class EngineCore {
  readonly kv: KvCacheManager;
  readonly scheduler: Scheduler;
  readonly limits: EngineLimits;
  private readonly requests = new Map<string, RequestState>();
  private readonly pendingAborts = new Set<string>();
  /** Pause / resume commands that arrived during a step; the last one per request wins. */
  private readonly pendingFlow = new Map<string, 'pause' | 'resume'>();
  private stepping = false;

  constructor(
    private readonly runner: ModelRunner,
    readonly config: EngineCoreConfig,
    private readonly processors: CompletionProcessorFactory,
    private readonly listener: EngineCoreListener,
  ) {
    this.kv = new KvCacheManager(runner.numBlocks, runner.blockSize, config.enablePrefixCaching);
    this.scheduler = new Scheduler(
      { maxNumSeqs: config.maxNumSeqs, maxNumBatchedTokens: config.maxNumBatchedTokens, policy: config.schedulingPolicy },
      this.kv,
    );
    this.limits = engineLimits({ maxModelLen: config.maxModelLen, numBlocks: runner.numBlocks, blockSize: runner.blockSize }, config, runner.config.vocabSize);
  }

  hasWork(): boolean {
    return this.scheduler.hasWork() || this.pendingAborts.size > 0;
  }

  /** Queues a request; throws (nothing queued) when it breaks an invariant or its bad words do not encode. */
  addRequest(request: EngineRequest): void {
    assertRequestInvariants(request, this.limits);
    if (this.requests.has(request.requestId)) {
      throw new RequestValidationError(`Request id ${request.requestId} is already running.`, 'request_id');
    }
    const numCompletions = request.params.best_of ?? request.params.n;
    const maxTokens = effectiveMaxTokens(request, this.config.maxModelLen);
    const processors = Array.from({ length: numCompletions }, (_, i) => this.processors.create(request, i, maxTokens));
    const state = new RequestState(request, processors, nowMs());
    const seq = this.newSequence(state, 0, request.promptTokenIds);
    state.completions[0].seq = seq;
    this.requests.set(request.requestId, state);
    this.scheduler.addSequence(seq);
  }

  /** Ends the requests with finish_reason 'abort' and frees their KV blocks (after the running step, if any). */
  abort(requestIds: readonly string[]): void {
    for (const id of requestIds) if (this.requests.has(id)) this.pendingAborts.add(id);
    if (!this.stepping) this.flushAborts();
  }

  /**
   * Sets the requests aside while their clients are not reading (their KV is freed and their
   * batch slots go to others), or takes them back. After the running step, if any.
   */
  pause(requestIds: readonly string[]): void {
    this.setFlow(requestIds, 'pause');
  }

  resume(requestIds: readonly string[]): void {
    this.setFlow(requestIds, 'resume');
  }

  private setFlow(requestIds: readonly string[], action: 'pause' | 'resume'): void {
    for (const id of requestIds) if (this.requests.has(id)) this.pendingFlow.set(id, action);
    if (!this.stepping) this.flushFlow();
  }

  private flushFlow(): void {
    if (this.pendingFlow.size === 0) return;
    for (const [id, action] of this.pendingFlow) {
      const state = this.requests.get(id);
      if (!state || state.finished) continue;
      if (action === 'pause') this.scheduler.pauseSequences(state.liveSeqIds());
      else this.scheduler.resumeSequences(state.liveSeqIds());
    }
    this.pendingFlow.clear();
    // The scheduler state changed without a step: report it (metrics would go stale when every
    // request is paused and no step runs).
    this.listener.onStep([], this.stats(), emptyIterationStats());
  }

  stats(): SchedulerStats {
    return {
      numRunning: this.scheduler.numRunning,
      numWaiting: this.scheduler.numWaiting,
      numPaused: this.scheduler.numPaused,
      kvCacheUsage: this.kv.usage(),
      numBlocks: this.kv.numBlocks,
      blockSize: this.kv.blockSize,
    };
  }

  /** One engine iteration. */
  async step(): Promise<void> {
    this.flushAborts();
    this.flushFlow();
    const plan = this.scheduler.schedule();
    const iteration = emptyIterationStats();
    iteration.numPreemptions = plan.preempted.length;
    iteration.prefixCacheQueries = plan.prefixCacheQueries;
    iteration.prefixCacheHits = plan.prefixCacheHits;
    if (plan.scheduled.length === 0) {
      if (plan.preempted.length > 0) this.listener.onStep([], this.stats(), iteration);
      return;
    }

    const batch = plan.scheduled.map(({ seq, numNewTokens }) => this.stepSequence(seq, numNewTokens));
    let result;
    this.stepping = true;
    try {
      result = await this.runner.step(batch);
    } catch (err) {
      this.stepping = false;
      this.failStep(plan, err, iteration);
      this.flushAborts();
      return;
    }
    this.stepping = false;

    const now = nowMs();
    const vocab = this.runner.config.vocabSize;
    const sampled = new Map<string, number>();
    const jobs: SampleJob[] = [];
    const touched = new Set<RequestState>();
    plan.scheduled.forEach(({ seq, numNewTokens, sample }, i) => {
      const state = this.requests.get(seq.requestId);
      if (!state || this.pendingAborts.has(seq.requestId) || seq.status !== 'running') return;
      try {
        const rows = result.allLogits[i];
        if (rows) this.collectPromptLogprobs(state, seq, numNewTokens, rows);
        if (!sample) return;
        // Before the fork, the prompt's last logits seed every completion (each with its own RNG).
        const completions = state.forked ? [state.completions[seq.index]] : state.completions;
        for (const completion of completions) {
          const token = this.sampleInto(completion, result.logits, i * vocab);
          if (completion.index === seq.index) sampled.set(seq.seqId, token);
          iteration.generationTokens++;
        }
        jobs.push({ state, completion: state.completions[seq.index], seq });
      } catch (err) {
        touched.add(state);
        state.finishAll('error', `post-processing failed: ${errorMessage(err)}`);
      }
    });
    this.scheduler.updateFromOutput(plan, sampled);

    for (const job of jobs) {
      const { state } = job;
      if (state.finished) continue;
      touched.add(state);
      try {
        this.recordTokenTimes(state, now, iteration);
        if (state.forked) {
          this.checkStop(job.completion);
        } else {
          for (const completion of state.completions) this.checkStop(completion);
          this.fork(state, job.seq);
        }
      } catch (err) {
        state.finishAll('error', `post-processing failed: ${errorMessage(err)}`);
      }
    }
    this.emit(touched, iteration, now);
    // Aborts (and pauses) that arrived during the step take effect now, not one step later.
    this.flushAborts();
    this.flushFlow();
  }

  private stepSequence(seq: Sequence, numNewTokens: number): StepSequence {
    const start = seq.numComputedTokens;
    const state = this.requests.get(seq.requestId)!;
    const promptLen = seq.numPromptTokens;
    const wantsPromptLogprobs = state.promptLogprobs !== null && seq.index === 0 && start < promptLen && state.promptLogprobs.length < promptLen;
    return {
      tokens: seq.tokenIds.slice(start, start + numNewTokens),
      positionOffset: start,
      blockTable: this.kv.blockTable(seq.seqId),
      ...(wantsPromptLogprobs ? { allLogits: true } : {}),
    };
  }

  /** Appends the prompt logprobs a chunk's per-token logits give (skipping positions known from before a preemption). */
  private collectPromptLogprobs(state: RequestState, seq: Sequence, numNewTokens: number, rows: Float32Array): void {
    const start = seq.numComputedTokens;
    const entries = this.processors.promptLogprobs(state.request, rows, start, numNewTokens);
    const known = state.promptLogprobs!;
    entries.forEach((entry, j) => {
      if (start + 1 + j >= known.length) known.push(entry);
    });
  }

  private sampleInto(completion: CompletionState, logits: Float32Array, offset: number): number {
    const sample = completion.processor.sample(logits, offset);
    completion.outputTokenIds.push(sample.tokenId);
    completion.cumulativeLogprob += sample.logprob;
    if (completion.logprobs !== null && sample.logprobs !== null) completion.logprobs.push(sample.logprobs);
    completion.dirty = true;
    return sample.tokenId;
  }

  /** Starts the unfinished completions 1.. of an n > 1 request on the parent's prompt KV. */
  private fork(state: RequestState, parent: Sequence): void {
    state.forked = true;
    const prompt = state.request.promptTokenIds;
    for (const completion of state.completions.slice(1)) {
      if (completion.finished) continue;
      const child = this.newSequence(state, completion.index, [...prompt, completion.outputTokenIds[0]]);
      completion.seq = child;
      const copies = this.scheduler.addForkedSequence(parent, child, prompt.length);
      if (copies.length > 0) this.runner.copyBlocks(copies);
    }
  }

  private recordTokenTimes(state: RequestState, now: number, iteration: IterationStats): void {
    if (state.firstTokenMs === null) {
      state.firstTokenMs = now;
      iteration.timeToFirstTokens.push((now - state.arrivalMs) / 1000);
      iteration.promptTokens += state.request.promptTokenIds.length;
    } else if (state.lastTokenMs !== now) {
      iteration.interTokenLatencies.push((now - (state.lastTokenMs ?? now)) / 1000);
    }
    state.lastTokenMs = now;
  }

  /** Token stops, length and stop strings for the completion's newest token. */
  private checkStop(completion: CompletionState): void {
    if (completion.finished) return;
    const status = completion.processor.appendToken(completion.outputTokenIds[completion.outputTokenIds.length - 1]);
    if (status === null) return;
    completion.finishReason = status.finishReason;
    completion.stopReason = status.stopReason;
    completion.dirty = true;
  }

  private failStep(plan: SchedulePlan, err: unknown, iteration: IterationStats): void {
    const message = `model step failed: ${errorMessage(err)}`;
    const touched = new Set<RequestState>();
    for (const { seq } of plan.scheduled) {
      const state = this.requests.get(seq.requestId);
      if (!state) continue;
      state.finishAll('error', message);
      touched.add(state);
    }
    this.emit(touched, iteration, nowMs());
  }

  private flushAborts(): void {
    if (this.pendingAborts.size === 0) return;
    const touched = new Set<RequestState>();
    for (const id of this.pendingAborts) {
      const state = this.requests.get(id);
      if (!state) continue;
      state.finishAll('abort');
      touched.add(state);
    }
    this.pendingAborts.clear();
    const iteration = emptyIterationStats();
    this.emit(touched, iteration, nowMs());
  }

  /** Frees finished sequences, sends outputs of the touched requests and the step's stats. */
  private emit(touched: Set<RequestState>, iteration: IterationStats, now: number): void {
    const outputs: RequestOutput[] = [];
    for (const state of touched) {
      // Every finished completion's sequence (all of them once the request is finished).
      this.scheduler.finishSequences(state.completions.filter((c) => c.finished && c.seq !== null && c.seq.status !== 'finished').map((c) => c.seq!.seqId));
      let output: RequestOutput | null;
      try {
        output = state.buildOutput();
      } catch (err) {
        state.finishAll('error', `output failed: ${errorMessage(err)}`);
        this.scheduler.finishSequences(state.liveSeqIds());
        output = errorOutput(state, errorMessage(err));
      }
      if (output) outputs.push(output);
      if (state.finished) {
        this.requests.delete(state.requestId);
        iteration.finished.push(state.finishedStats(now));
      }
    }
    this.listener.onStep(outputs, this.stats(), iteration);
  }

  private newSequence(state: RequestState, index: number, tokenIds: readonly number[]): Sequence {
    const r = state.request;
    return new Sequence(
      `${r.requestId}#${index}`,
      r.requestId,
      index,
      tokenIds,
      r.promptTokenIds.length,
      r.priority ?? 0,
      r.cacheSalt ?? null,
      r.params.prompt_logprobs !== null,
    );
  }
}

function emptyIterationStats(): IterationStats {
  return {
    promptTokens: 0,
    generationTokens: 0,
    timeToFirstTokens: [],
    interTokenLatencies: [],
    finished: [],
    numPreemptions: 0,
    prefixCacheQueries: 0,
    prefixCacheHits: 0,
  };
}

function errorOutput(state: RequestState, message: string): RequestOutput {
  return {
    requestId: state.requestId,
    promptTokenIds: state.request.promptTokenIds,
    promptLogprobs: null,
    outputs: state.completions.map((c) => ({
      index: c.index,
      text: '',
      tokenIds: [],
      cumulativeLogprob: null,
      logprobs: null,
      finishReason: 'error',
      stopReason: null,
    })),
    finished: true,
    numCachedTokens: 0,
    error: message,
  };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
