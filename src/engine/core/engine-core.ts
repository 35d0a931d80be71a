// The engine's step loop (vLLM V1 EngineCore.step): schedule → runner.step → sample →
// detokenize / stop-check → outputs. Requests join and leave the batch at step
// boundaries. Runs the same in a worker thread or in-process (see core-host.ts).
//
// Kept lean per sequence (no per-step closures, spreads or second result objects): what a step
// costs above the model is in docs/perf/engine-overhead.md.

import { RequestValidationError } from '../errors';
import type { KvTransferRole } from '../kv-transfer/kv-transfer-params';
import type { EngineRequest, IterationStats, PromptTokenSources, PositionLogprobs, LoraEngineOptions, LoraRequest, PartialPrefillLimits, RequestOutput, SchedulerStats } from '../types';
import { encoderSpecOf } from '../../model/encoder-spec';
import { loadLoraAdapter } from '../../model/lora/load-lora';
import type { DecoderArchConfig, ModelRunner, StepEncoderInput, StepSequence } from '../../model/types';
import { nowMs } from '../clock';
import type { CompletionProcessorFactory } from './completion-processor';
import { GrammarAdmission, type GrammarEngines } from './grammar-admission';
import type { SequenceConstraint } from '../sampling/logits-processor';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS, type StructuredOutputsLimits } from '../structured/grammar-limits';
import { NO_STRUCTURED_DEFAULTS, type StructuredOutputsDefaults } from '../structured/grammar-spec';
import { capacityBlocks, kvManagerFor } from './hybrid-kv-cache';
import type { EngineKvManager } from './kv-cache-manager';
import { LoraAdapterStore, type LoraLoader } from './lora-adapters';
import { RequestState, type CompletionState } from './request-state';
import { Scheduler, type SchedulePlan, type SchedulingPolicy } from './scheduler';
import { Sequence } from './sequence';
import { emptySpecStats, type Speculation } from './speculation';
import { createKvTransferAgent, ignoredKvTransfer, type KvTransferAgent, type RemotePromptTokens } from './kv-transfer-agent';
import type { KvTransferConfig } from '../kv-transfer/kv-transfer-config';
import { assertRequestInvariants, checkLoraRequest, effectiveMaxTokens, engineLimits, loraNotEnabled, type EngineLimits } from './validate-request';
import type { ImageEmbedder } from './image-embedder';
import { assertImageInvariants, RequestImages } from './request-images';

export interface EngineCoreConfig {
  maxModelLen: number;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  schedulingPolicy: SchedulingPolicy;
  enablePrefixCaching: boolean;
  partialPrefills?: PartialPrefillLimits;
  /** --enable-lora (absent: requests naming an adapter are refused). */
  lora?: LoraEngineOptions;
  /** --speculative-config: the proposer and its settings (absent: no speculative decoding). */
  speculation?: Speculation;
  /** --kv-transfer-config (absent: kv_transfer_params ask for nothing here). */
  kvTransfer?: KvTransferConfig;
  /** A vision-language model's encoder step (absent: requests with images are refused). */
  images?: ImageEmbedder;
}

export interface EngineCoreListener {
  /**
   * Outputs of one step (or of an abort), the scheduler state after it and the step's stats,
   * in one call so a worker sends one message (one wake-up of the HTTP thread) per step.
   */
  onStep(outputs: RequestOutput[], stats: SchedulerStats, iteration: IterationStats): void;
  /** A request refused after it was queued (its grammar did not compile). */
  onReject?(requestId: string, err: unknown): void;
}

/** The least a step waits for late grammar masks after its forward pass, in ms. */
const MIN_MASK_WAIT_MS = 2;

/** True when `promise` settles within `ms`. */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([promise.then(() => true), timeout]).finally(() => clearTimeout(timer));
}

/** Structured outputs: the grammar workers (null without a tokenizer), the server's defaults and limits. */
export interface EngineCoreGrammar {
  engines: GrammarEngines | null;
  defaults?: StructuredOutputsDefaults;
  limits?: StructuredOutputsLimits;
}

interface SampleJob {
  state: RequestState;
  completion: CompletionState;
  seq: Sequence;
  /** Its tokens were stop-checked as they were kept (a step that verified drafts). */
  stopChecked: boolean;
}

export class EngineCore {
  readonly kv: EngineKvManager;
  readonly scheduler: Scheduler;
  readonly limits: EngineLimits;
  /** --enable-lora: the adapters loaded (null without it). */
  readonly loras: LoraAdapterStore | null;
  /** --kv-transfer-config: pins, offers and pulls prompt KV (null without it). */
  readonly kvTransfer: KvTransferAgent | null;
  private readonly requests = new Map<string, RequestState>();
  /** Requests to end after the running step: null = aborted, else the error they fail with. */
  private readonly pendingAborts = new Map<string, string | null>();
  /** Set while a step with nothing to run waits for an adapter to load: new work ends the wait. */
  private endIdleWait: (() => void) | null = null;
  /** Pause / resume commands that arrived during a step; the last one per request wins. */
  private readonly pendingFlow = new Map<string, 'pause' | 'resume'>();
  private readonly grammars: GrammarAdmission;
  private stepping = false;
  /**
   * Grammar masks a step asked for and did not get in time (the grammar worker is compiling):
   * until they come, constrained sequences sit steps out instead of holding up the batch.
   */
  private lateMasks: Promise<unknown> | null = null;
  /** The last forward pass's duration: how long a step waits for masks beyond it. */
  private lastForwardMs = 0;
  /** Called when work arrives outside addRequest (a compiled grammar admits its request): wakes an idle step loop. */
  onWork: () => void = () => {};

  constructor(
    private runner: ModelRunner,
    readonly config: EngineCoreConfig,
    private readonly processors: CompletionProcessorFactory,
    private readonly listener: EngineCoreListener,
    grammar: EngineCoreGrammar = { engines: null },
    loraLoader: LoraLoader = loadLoraAdapter,
  ) {
    this.grammars = new GrammarAdmission(grammar.engines, grammar.defaults ?? NO_STRUCTURED_DEFAULTS, grammar.limits ?? DEFAULT_STRUCTURED_OUTPUTS_LIMITS, {
      admit: (request, constraints) => {
        this.admit(request, constraints);
        this.onWork();
      },
      reject: (request, err) => this.reject(request, err),
    });
    this.kv = kvManagerFor(runner, config.enablePrefixCaching);
    this.loras = config.lora ? this.adapterStore(config.lora, loraLoader) : null;
    this.kvTransfer = config.kvTransfer ? this.kvTransferAgent(config.kvTransfer) : null;
    const kvTransfer = this.kvTransfer;
    const loras = this.loras;
    this.scheduler = new Scheduler(
      {
        maxNumSeqs: config.maxNumSeqs,
        maxNumBatchedTokens: config.maxNumBatchedTokens,
        policy: config.schedulingPolicy,
        partialPrefills: config.partialPrefills,
        lora: loras ? { maxLoras: loras.maxLoras, ready: (lora) => loras.ready(lora) } : undefined,
        remoteKv: kvTransfer ? { start: (seq, localTokens) => kvTransfer.start(seq, localTokens) } : undefined,
      },
      this.kv,
    );
    this.limits = engineLimits(
      { maxModelLen: config.maxModelLen, numBlocks: runner.numBlocks, kvCapacityBlocks: capacityBlocks(runner, config.maxModelLen), blockSize: runner.blockSize },
      config,
      runner.config.vocabSize,
      encoderSpecOf(runner.config),
    );
  }

  private adapterStore(options: LoraEngineOptions, loader: LoraLoader): LoraAdapterStore {
    if (!this.runner.loras) throw new Error(`--enable-lora: the runner of ${this.runner.config.architecture} does not apply LoRA adapters`);
    return new LoraAdapterStore(options, this.runner.config as DecoderArchConfig, this.runner.loras, loader, {
      inUse: () => this.scheduler.adapterIdsInUse(),
      loaded: () => {
        this.endIdleWait?.();
        this.onWork();
      },
      failed: (id, message) => this.failAdapterRequests(id, message),
    });
  }

  private kvTransferAgent(config: KvTransferConfig): KvTransferAgent {
    return createKvTransferAgent(config, this.kv, () => this.runner, {
      wake: () => {
        this.endIdleWait?.();
        this.onWork();
      },
      released: () => {
        if (this.stepping) return;
        const iteration = emptyIterationStats();
        iteration.kvTransfer = this.kvTransfer?.drainStats();
        this.listener.onStep([], this.stats(), iteration);
      },
    });
  }

  /** load_lora_adapter: reads and checks the adapter, keeping it for the requests that name it. */
  loadLora(request: LoraRequest): Promise<void> {
    if (!this.loras) return Promise.reject(new Error(loraNotEnabled(request)));
    return this.loras.add(request);
  }

  /** unload_lora_adapter: see LoraAdapterStore.remove (requests already queued with it finish with it). */
  unloadLora(id: number): void {
    this.loras?.remove(id);
  }

  /** The requests naming adapter `id` (none has run: its load failed) fail with `message`. */
  private failAdapterRequests(id: number, message: string): void {
    for (const state of this.requests.values()) if (state.request.lora?.id === id && !state.finished) this.pendingAborts.set(state.requestId, message);
    if (!this.stepping) this.flushAborts();
    this.endIdleWait?.();
    this.onWork();
  }

  /** Aborts every request (sleep with mode 'abort'), those whose grammar is still compiling too. */
  abortAll(): void {
    this.abort([...this.requests.keys(), ...this.grammars.requestIds()]);
  }

  /** Swaps in a new runner (after sleep); only when no request holds KV blocks. */
  replaceRunner(runner: ModelRunner): void {
    if (this.requests.size > 0) throw new Error('cannot replace the runner while requests are in flight');
    const pools = (r: ModelRunner) => r.kvPools?.map((p) => `${p.numBlocks}/${p.window}`).join() ?? '';
    if (runner.numBlocks !== this.kv.numBlocks || runner.blockSize !== this.kv.blockSize || pools(runner) !== pools(this.runner)) {
      throw new Error('the new runner has a different KV layout');
    }
    if (this.loras && !runner.loras) throw new Error('the new runner does not apply LoRA adapters');
    this.kv.resetPrefixCache();
    // The pinned blocks' K/V went with the old runner: no decode replica may pull them now.
    this.kvTransfer?.withdrawAll();
    this.runner = runner;
    this.loras?.attach(runner.loras ?? null);
  }

  /** Something to step now (requests whose grammar is still compiling wait for onWork instead). */
  hasWork(): boolean {
    return this.scheduler.hasWork() || this.pendingAborts.size > 0 || (this.kvTransfer?.hasCompleted() ?? false);
  }

  /**
   * Queues a request; throws (nothing queued) when it breaks an invariant or its bad words do not
   * encode. A request with structured_outputs first waits for its grammar (GrammarAdmission).
   */
  addRequest(request: EngineRequest): void {
    assertRequestInvariants(request, this.limits);
    assertImageInvariants(request, this.config.images !== undefined);
    checkLoraRequest(request, this.loras !== null);
    this.refuseImagesWhereUnsupported(request);
    this.kvTransferRole(request);
    if (this.requests.has(request.requestId) || this.grammars.has(request.requestId)) {
      throw new RequestValidationError(`Request id ${request.requestId} is already running.`, 'request_id');
    }
    if (request.params.structured_outputs != null) {
      this.grammars.enqueue(request);
      return;
    }
    this.admit(request, []);
  }

  /**
   * Drafts are verified over token embeddings and a KV transfer moves only token-keyed blocks:
   * neither places image rows yet, so a request with images is refused rather than answered wrong.
   */
  private refuseImagesWhereUnsupported(request: EngineRequest): void {
    if (!request.multiModal || request.multiModal.images.length === 0) return;
    // A run computed whole must fit one step (start-up checks the model's usual image size).
    const longest = Math.max(...(request.multiModal.placements ?? []).map((p) => p.length));
    if (this.config.images?.bidirectional && longest > this.config.maxNumBatchedTokens) {
      throw new RequestValidationError(
        `An image of ${longest} tokens is larger than max_num_batched_tokens (${this.config.maxNumBatchedTokens}); this model computes each image in one step.`,
        'messages',
      );
    }
    if (this.config.speculation) throw new RequestValidationError('Image inputs are not supported with speculative decoding (--speculative-config).', 'messages');
    if (this.kvTransfer && this.kvTransfer.roleOf(request) !== null) {
      throw new RequestValidationError('Image inputs are not supported with prefill/decode KV transfer (kv_transfer_params).', 'kv_transfer_params');
    }
  }

  private admit(request: EngineRequest, constraints: SequenceConstraint[]): void {
    const numCompletions = request.params.best_of ?? request.params.n;
    const maxTokens = effectiveMaxTokens(request, this.config.maxModelLen);
    let processors;
    try {
      processors = Array.from({ length: numCompletions }, (_, i) => this.processors.create(request, i, maxTokens, constraints[i] ?? null));
    } catch (err) {
      for (const c of constraints) c.dispose();
      if (constraints.length === 0) throw err;
      this.reject(request, err);
      return;
    }
    const state = new RequestState(request, processors, nowMs());
    state.kvRole = this.kvTransferRole(request);
    if (request.multiModal && request.multiModal.images.length > 0) {
      state.images = new RequestImages(request.multiModal);
      this.config.images?.countQueries(state.images);
      // The pixels now live in state.images alone, which drops each image once it is encoded.
      request.multiModal = { ...request.multiModal, images: [] };
    }
    const seq = this.newSequence(state, 0, request.promptTokenIds);
    if (state.kvRole?.kind === 'receive') seq.remotePrefill = { source: state.kvRole.source, state: 'pending' };
    state.completions[0].seq = seq;
    this.requests.set(request.requestId, state);
    this.scheduler.addSequence(seq);
    this.endIdleWait?.();
  }

  /** The request's part in a KV transfer (throws a 400 for params this replica cannot honour); without a connector, none. */
  private kvTransferRole(request: EngineRequest): KvTransferRole | null {
    return this.kvTransfer ? this.kvTransfer.roleOf(request) : ignoredKvTransfer(request);
  }

  /** Ends the requests with finish_reason 'abort' and frees their KV blocks (after the running step, if any). */
  abort(requestIds: readonly string[]): void {
    const notStarted: EngineRequest[] = [];
    for (const id of requestIds) {
      if (this.requests.has(id) && !this.pendingAborts.has(id)) this.pendingAborts.set(id, null);
      const waiting = this.grammars.remove(id);
      if (waiting) notStarted.push(waiting);
    }
    if (notStarted.length > 0) this.listener.onStep(notStarted.map(abortedOutput), this.stats(), emptyIterationStats());
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
    this.endIdleWait?.();
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
    const stats: SchedulerStats = {
      numRunning: this.scheduler.numRunning,
      // Requests whose grammar compiles wait too (vLLM's WAITING_FOR_FSM), deferred rather than short of
      // capacity, as are those passed over for their LoRA adapter (vLLM's skipped waiting requests).
      numWaiting: this.scheduler.numWaiting + this.grammars.size,
      numDeferred: this.grammars.size + this.scheduler.numAdapterDeferred + this.scheduler.numAwaitingKv,
      numPaused: this.scheduler.numPaused,
      kvCacheUsage: this.kv.usage(),
      numBlocks: this.kv.numBlocks,
      blockSize: this.kv.blockSize,
    };
    if (this.loras) {
      const names = this.scheduler.adapterNames();
      stats.runningLoraAdapters = names.running;
      stats.waitingLoraAdapters = names.waiting;
    }
    return stats;
  }

  /** One engine iteration. */
  async step(): Promise<void> {
    this.flushAborts();
    this.flushFlow();
    const remote = this.kvTransfer?.hasCompleted() ? this.kvTransfer.applyCompleted(this.scheduler) : null;
    const speculation = this.config.speculation;
    if (speculation) await this.draft(speculation);
    const awaitingBefore = this.scheduler.numAwaitingKv;
    const plan = this.scheduler.schedule();
    const iteration = emptyIterationStats();
    iteration.numPreemptions = plan.preempted.length;
    iteration.prefixCacheQueries = plan.prefixCacheQueries;
    iteration.prefixCacheHits = plan.prefixCacheHits;
    iteration.promptTokensCached = plan.promptTokensCached + (remote ? remote.localHit + remote.external : 0);
    iteration.promptTokensRecomputed = plan.promptTokensRecomputed;
    if (plan.promptTokensAdmitted > 0 || remote) iteration.promptTokensBySource = promptTokenSources(plan, remote);
    const transfers = this.kvTransfer?.drainStats();
    if (transfers) iteration.kvTransfer = transfers;
    const batch = this.buildBatch(plan);
    const mmCache = this.config.images?.cache?.drainStats();
    if (mmCache) {
      iteration.mmCacheQueries = mmCache.queries;
      iteration.mmCacheHits = mmCache.hits;
    }
    if (plan.scheduled.length === 0) {
      // Preemptions, or requests set aside to pull their prompt's KV, changed the queues: report them.
      if (plan.preempted.length > 0 || this.scheduler.numAwaitingKv !== awaitingBefore || remote || transfers) this.listener.onStep([], this.stats(), iteration);
      // Nothing can run until an adapter loads: wait for it (or for new work) rather than spin.
      if (this.loras?.loading) await this.idleUntilAdapterOrWork(this.loras);
      return;
    }

    let result;
    /** Sequences this step computes but does not advance (their grammar mask is late): they run again next step. */
    const sitOut = new Set<string>();
    this.stepping = true;
    try {
      // Grammar masks are asked for first: the grammar worker fills them while the model runs.
      const masks = this.prepareSamples(plan, sitOut);
      if (sitOut.size > 0 && plan.scheduled.every(({ seq, sample }) => sample && sitOut.has(seq.seqId))) {
        // Nothing but sequences waiting for masks: wait here rather than compute steps for nothing.
        this.stepping = false;
        this.scheduler.updateFromOutput(plan, new Map(), sitOut); // drops their drafts and the blocks they took
        await this.lateMasks;
        return;
      }
      const started = nowMs();
      result = await this.runner.step(batch);
      this.lastForwardMs = nowMs() - started;
      if (masks && !(await settlesWithin(masks.done, Math.max(MIN_MASK_WAIT_MS, this.lastForwardMs)))) {
        for (const id of masks.seqIds) sitOut.add(id);
        const late: Promise<unknown> = masks.done.finally(() => {
          if (this.lateMasks === late) this.lateMasks = null;
          this.onWork();
        });
        this.lateMasks = late;
      }
    } catch (err) {
      this.stepping = false;
      this.failStep(plan, err, iteration);
      this.flushAborts();
      return;
    }
    this.stepping = false;
    for (const { seq } of plan.scheduled) seq.encoded = true;

    const now = nowMs();
    const vocab = this.runner.config.vocabSize;
    const sampled = new Map<string, number>();
    const verified = speculation ? new Map<string, readonly number[]>() : undefined;
    if (speculation) iteration.specDecoding = emptySpecStats(speculation.config.numSpeculativeTokens);
    const jobs: SampleJob[] = [];
    const touched = new Set<RequestState>();
    for (let i = 0; i < plan.scheduled.length; i++) {
      const { seq, numNewTokens, sample } = plan.scheduled[i];
      const state = this.requests.get(seq.requestId);
      if (!state || this.pendingAborts.has(seq.requestId) || seq.status !== 'running' || sitOut.has(seq.seqId)) continue;
      try {
        const rows = result.allLogits[i];
        const drafts = seq.draftTokenIds;
        if (drafts.length > 0 && sample && rows) {
          const kept = this.verifyDrafts(state.completions[seq.index], drafts, rows, iteration);
          verified!.set(seq.seqId, kept);
          jobs.push({ state, completion: state.completions[seq.index], seq, stopChecked: true });
          continue;
        }
        if (rows) this.collectPromptLogprobs(state, seq, numNewTokens, rows);
        if (!sample) continue;
        // Before the fork, the prompt's last logits seed every completion (each with its own RNG).
        const first = state.forked ? seq.index : 0;
        const end = state.forked ? seq.index + 1 : state.completions.length;
        for (let c = first; c < end; c++) {
          const token = this.sampleInto(state.completions[c], result.logits, i * vocab);
          if (c === seq.index) sampled.set(seq.seqId, token);
          iteration.generationTokens++;
        }
        jobs.push({ state, completion: state.completions[seq.index], seq, stopChecked: false });
      } catch (err) {
        touched.add(state);
        state.finishAll('error', `post-processing failed: ${errorMessage(err)}`);
      }
    }
    this.scheduler.updateFromOutput(plan, sampled, sitOut, verified);
    if (speculation) for (const seq of plan.preempted) speculation.release(seq.seqId);

    for (const job of jobs) {
      const { state } = job;
      // Verified drafts were stop-checked as they were kept: a stop there finished the request already.
      if (state.finished && !job.stopChecked) continue;
      touched.add(state);
      try {
        this.recordTokenTimes(state, now, iteration);
        if (job.stopChecked) continue;
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
    this.addCompileStats(iteration);
    this.emit(touched, iteration, now);
    // Aborts (and pauses) that arrived during the step take effect now, not one step later.
    this.flushAborts();
    this.flushFlow();
  }

  /** Drafts tokens for the decoding sequences (before scheduling, which budgets them). */
  private async draft(speculation: Speculation): Promise<void> {
    if (!speculation.activeAt(this.scheduler.numRunning)) return;
    const decoding = this.scheduler.decodingSequences();
    if (decoding.length > 0) await speculation.draft(decoding, this.requests);
  }

  /**
   * Walks a sequence's drafts: each is verified from the logits of the position before it, and
   * the walk ends at the first one replaced, or at a stop; when all are kept, the last position's
   * logits give one token more. Returns the tokens kept, each recorded and stop-checked in order.
   */
  private verifyDrafts(completion: CompletionState, proposed: readonly number[], rows: Float32Array, iteration: IterationStats): number[] {
    const vocab = this.runner.config.vocabSize;
    const stats = iteration.specDecoding!;
    // A grammar's masks stop at the first draft it rejects: the drafts after it are dropped (and not counted, as vLLM).
    const usable = completion.processor.verifiableDrafts(proposed.length);
    const drafts = usable < proposed.length ? proposed.slice(0, usable) : proposed;
    if (drafts.length > 0) stats.numDrafts++;
    stats.numDraftTokens += drafts.length;
    const kept: number[] = [];
    for (let j = 0; j <= drafts.length && !completion.finished; j++) {
      // Every token kept so far was drawn from the target: ending the walk early is exact.
      if (j > 0 && !completion.processor.canVerifyNext()) break;
      let accepted = false;
      if (j < drafts.length) {
        if (completion.prepareError !== null) throw completion.prepareError;
        const result = completion.processor.verify(rows, j * vocab, drafts[j]);
        this.record(completion, result);
        accepted = result.accepted;
      } else {
        this.sampleInto(completion, rows, j * vocab);
      }
      kept.push(completion.outputTokenIds[completion.outputTokenIds.length - 1]);
      iteration.generationTokens++;
      this.checkStop(completion);
      if (j === drafts.length) break;
      if (!accepted) break;
      stats.numAcceptedTokens++;
      stats.acceptedPerPosition[j]++;
    }
    return kept;
  }

  /**
   * Starts each completion's pre-sampling work (grammar bitmasks, filled by the grammar worker
   * while the model runs) for the sequences this step samples. Never rejects: a failure is kept
   * and raised when that completion is sampled, so it ends only its own request. null when no
   * completion has such work (no grammar): the step then awaits the runner alone. While earlier
   * masks are late, constrained sequences are put in `sitOut` instead of asking again.
   */
  private prepareSamples(plan: SchedulePlan, sitOut: Set<string>): { done: Promise<unknown>; seqIds: Set<string> } | null {
    let work: Promise<void>[] | null = null;
    const seqIds = new Set<string>();
    for (const { seq, sample } of plan.scheduled) {
      if (!sample) continue;
      const state = this.requests.get(seq.requestId);
      if (!state) continue;
      const completions = state.forked ? [state.completions[seq.index]] : state.completions;
      // No filtered copy per sequence and step: finished completions are skipped in place.
      if (this.lateMasks && completions.some((c) => !c.finished && c.processor.waitsForMask())) {
        sitOut.add(seq.seqId);
        continue;
      }
      for (const completion of completions) {
        if (completion.finished) continue;
        // Drafts are final here (cut to the step's budget); only a forked sequence has them.
        const pending = completion.processor.prepare(state.forked ? seq.draftTokenIds : undefined);
        if (!pending) continue;
        seqIds.add(seq.seqId);
        (work ??= []).push(pending.catch((err: unknown) => void (completion.prepareError = err instanceof Error ? err : new Error(String(err)))));
      }
    }
    return work === null ? null : { done: Promise.all(work), seqIds };
  }

  private async idleUntilAdapterOrWork(loras: LoraAdapterStore): Promise<void> {
    const work = new Promise<void>((resolve) => (this.endIdleWait = resolve));
    await Promise.race([loras.anyLoadSettled(), work]);
    this.endIdleWait = null;
  }

  private addCompileStats(iteration: IterationStats): void {
    const stats = this.grammars.drainStats();
    if (!stats) return;
    iteration.grammarCompileSeconds = [...(iteration.grammarCompileSeconds ?? []), ...stats.compileSeconds];
    iteration.grammarCacheHits = (iteration.grammarCacheHits ?? 0) + stats.cacheHits;
    iteration.grammarCacheMisses = (iteration.grammarCacheMisses ?? 0) + stats.cacheMisses;
  }

  /** Refuses a request that was already queued: a 400 through the listener, else an error output. */
  private reject(request: EngineRequest, err: unknown): void {
    if (this.listener.onReject) {
      this.listener.onReject(request.requestId, err);
      return;
    }
    const output = abortedOutput(request);
    for (const o of output.outputs) o.finishReason = 'error';
    this.listener.onStep([{ ...output, error: errorMessage(err) }], this.stats(), emptyIterationStats());
  }

  /**
   * The step's sequences. A request whose images fail to encode leaves the plan and is refused
   * (its error reaches only its client); the others run.
   */
  private buildBatch(plan: SchedulePlan): StepSequence[] {
    const batch: StepSequence[] = [];
    for (let i = 0; i < plan.scheduled.length; ) {
      const { seq, numNewTokens } = plan.scheduled[i];
      try {
        batch.push(this.stepSequence(seq, numNewTokens));
        i++;
      } catch (err) {
        plan.scheduled.splice(i, 1);
        plan.numScheduledTokens -= numNewTokens;
        this.refuseStarted(seq.requestId, err);
      }
    }
    return batch;
  }

  /** Ends a request that was admitted but has sent nothing yet (its images failed): refused as at admission. */
  private refuseStarted(requestId: string, err: unknown): void {
    const state = this.requests.get(requestId);
    if (!state) return;
    this.scheduler.finishSequences(state.liveSeqIds());
    this.requests.delete(requestId);
    for (const c of state.completions) c.processor.dispose();
    this.reject(state.request, err);
  }

  private stepSequence(seq: Sequence, numNewTokens: number): StepSequence {
    const start = seq.numComputedTokens;
    const state = this.requests.get(seq.requestId)!;
    const promptLen = seq.numPromptTokens;
    const wantsPromptLogprobs = state.promptLogprobs !== null && seq.index === 0 && start < promptLen && state.promptLogprobs.length < promptLen;
    const drafts = seq.draftTokenIds;
    const step: StepSequence = {
      tokens: drafts.length > 0 ? [...seq.tokenIds.slice(start), ...drafts] : seq.tokenIds.slice(start, start + numNewTokens),
      positionOffset: start,
      blockTable: this.kv.blockTable(seq.seqId),
    };
    // Verifying drafts needs the logits after every one of them, each as a plain decode computes it.
    if (drafts.length > 0) step.allLogits = step.attendRowByRow = true;
    if (this.kv.blockTables) step.blockTables = this.kv.blockTables(seq.seqId);
    if (seq.lora) step.lora = seq.lora.id;
    if (wantsPromptLogprobs) step.allLogits = true;
    if (seq.encoderInput) step.encoder = this.encoderStep(seq, seq.encoderInput);
    if (state.images) this.imageStep(step, state.images, start, promptLen);
    return step;
  }

  /** The image rows of the step's prompt positions (encoded now where not yet) and its M-RoPE positions. */
  private imageStep(step: StepSequence, images: RequestImages, start: number, promptLen: number): void {
    const promptRows = Math.min(step.tokens.length, promptLen - start);
    const embeds = promptRows > 0 ? this.config.images!.embedsFor(images, start, promptRows) : undefined;
    if (embeds) step.inputEmbeds = embeds;
    if (embeds && this.config.images!.bidirectional) step.bidirectionalRuns = images.wholeRuns(start, promptRows);
    const positions = images.ropePositions(start, step.tokens.length);
    if (positions) step.ropePositions = positions;
  }

  /** The sequence's cross-attention blocks, and its encoder input until they have been filled. */
  private encoderStep(seq: Sequence, input: Float32Array): StepEncoderInput {
    const blockTable = this.kv.encoderBlockTable(seq.seqId);
    return seq.encoded ? { blockTable } : { blockTable, features: input };
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
    if (completion.prepareError !== null) throw completion.prepareError;
    return this.record(completion, completion.processor.sample(logits, offset));
  }

  /** Appends a kept token, its logprob and logprobs to the completion. */
  private record(completion: CompletionState, sample: { tokenId: number; logprob: number; logprobs: PositionLogprobs | null }): number {
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
    for (const [id, error] of this.pendingAborts) {
      const state = this.requests.get(id);
      if (!state) continue;
      if (error === null) state.finishAll('abort');
      else state.finishAll('error', error);
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
      for (const c of state.completions) {
        if (c.finished && c.seq !== null && c.seq.status !== 'finished') {
          if (state.kvRole?.kind === 'send' && (c.finishReason === 'length' || c.finishReason === 'stop')) state.kvTransferParams = this.kvTransfer!.offer(state.requestId, c.seq);
          this.scheduler.finishSequences([c.seq.seqId]);
          this.config.speculation?.release(c.seq.seqId);
        }
      }
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
        for (const c of state.completions) c.processor.dispose();
        iteration.finished.push(state.finishedStats(now));
      }
    }
    if (iteration.finished.length > 0) this.loras?.dropUnused();
    this.listener.onStep(outputs, this.stats(), iteration);
  }

  private newSequence(state: RequestState, index: number, tokenIds: readonly number[]): Sequence {
    const r = state.request;
    const seq = new Sequence(
      `${r.requestId}#${index}`,
      r.requestId,
      index,
      tokenIds,
      r.promptTokenIds.length,
      r.priority ?? 0,
      r.cacheSalt ?? null,
      r.params.prompt_logprobs !== null,
      r.encoderInput ?? null,
      r.encoderInput ? (this.limits.encoder?.positions ?? 0) : 0,
      r.lora ?? null,
      r.multiModal?.placements ?? null,
    );
    if (this.config.images?.bidirectional && r.multiModal?.placements?.length) seq.wholeImageRuns = r.multiModal.placements;
    return seq;
  }
}

export function emptyIterationStats(): IterationStats {
  return {
    promptTokens: 0,
    generationTokens: 0,
    timeToFirstTokens: [],
    interTokenLatencies: [],
    finished: [],
    numPreemptions: 0,
    prefixCacheQueries: 0,
    prefixCacheHits: 0,
    promptTokensCached: 0,
    promptTokensRecomputed: 0,
    grammarCompileSeconds: [],
    grammarCacheHits: 0,
    grammarCacheMisses: 0,
  };
}

/**
 * vLLM's split of newly scheduled prompts: a local prefix hit's tokens (with the block recomputed
 * for the logits) are local_cache_hit, pulled ones external_kv_transfer, the rest local_compute.
 */
function promptTokenSources(plan: SchedulePlan, remote: RemotePromptTokens | null): PromptTokenSources {
  const r = remote ?? { total: 0, localHit: 0, external: 0 };
  return {
    localCompute: plan.promptTokensAdmitted - plan.promptTokensCached + r.total - r.localHit - r.external,
    localCacheHit: plan.promptTokensCached + plan.promptTokensRecomputed + r.localHit,
    externalKvTransfer: r.external,
  };
}

/** The final output of a request aborted before it started (while its grammar was compiling). */
function abortedOutput(request: EngineRequest): RequestOutput {
  const count = request.params.best_of ?? request.params.n;
  return {
    requestId: request.requestId,
    promptTokenIds: request.promptTokenIds,
    promptLogprobs: null,
    outputs: Array.from({ length: Math.min(count, request.params.n) }, (_, index) => ({
      index,
      text: '',
      tokenIds: [],
      cumulativeLogprob: null,
      logprobs: null,
      finishReason: 'abort' as const,
      stopReason: null,
    })),
    finished: true,
    numCachedTokens: 0,
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
