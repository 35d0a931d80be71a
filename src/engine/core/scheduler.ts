// Continuous batching (vLLM V1 scheduler, one unified token budget per step).
// Running sequences go first (decodes and unfinished prefill chunks), then waiting ones
// join while the budget, max_num_seqs and free KV blocks allow. A sequence that cannot
// get a block preempts the lowest-ranked running sequence, which frees its blocks and
// goes back to the waiting queue to be recomputed later. A paused sequence (its client stopped
// reading) leaves the batch but keeps its KV blocks, so it resumes where it stopped with the very
// K/V it had (a recompute as a prefill can differ in the last bits, e.g. in a float16 cache, and
// flip a seeded sample); only when blocks run short are a paused sequence's freed, before any
// running sequence is preempted, and it is then recomputed on resume. An image whose tokens
// attend both ways is computed in one step (image-runs.ts).

import type { LoraRequest, PartialPrefillLimits } from '../types';
import { nowMs } from '../clock';
import { chunkKeepingRunsWhole, hitBlocksKeepingRunsWhole } from './image-runs';
import type { BlockCopy, BlockManager, PrefixHit } from './kv-cache-manager';
import type { Sequence } from './sequence';

export type SchedulingPolicy = 'fcfs' | 'priority';

export interface SchedulerConfig {
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  policy: SchedulingPolicy;
  /** vLLM's concurrent partial prefill limits; absent = one step's budget is the only limit. */
  partialPrefills?: PartialPrefillLimits;
  /** --enable-lora: the batch's adapter limit, and whether a sequence's adapter is loaded (absent: base model only). */
  lora?: SchedulerLora;
  /** --kv-transfer-config: starts pulling a sequence's prompt KV into its blocks (absent: none is pulled). */
  remoteKv?: { start(seq: Sequence, localTokens: number): void };
}

export interface SchedulerLora {
  /** --max-loras: distinct adapters the running batch may hold (the base model does not count). */
  maxLoras: number;
  /** Whether the adapter can run now (loaded); false starts loading it, and the sequence waits. */
  ready(lora: LoraRequest): boolean;
}

/** Shared empty draft list (never pushed to: a sequence gets a new array when it drafts). */
const NO_DRAFTS: number[] = [];

const NO_PARTIAL_LIMITS: PartialPrefillLimits = { maxNumPartialPrefills: Infinity, maxLongPartialPrefills: Infinity, longPrefillTokenThreshold: 0 };

/**
 * Counts the prefills a step leaves unfinished ("partial") against --max-num-partial-prefills and,
 * for prompts longer than --long-prefill-token-threshold, --max-long-partial-prefills; the
 * threshold also caps every prefill chunk (vLLM V1). With the defaults (1, 1, 0) nothing changes:
 * the token budget runs out at most once per step, so at most one prefill is ever partial.
 */
class PartialPrefillBudget {
  private partial = 0;
  private longPartial = 0;
  constructor(private readonly limits: PartialPrefillLimits) {}

  /** Tokens this sequence may compute now (0 = not this step), given what is left of the budget. */
  chunk(seq: Sequence, fromToken: number, budget: number): number {
    // A decode with drafts is no prefill: what the budget leaves of its drafts is verified.
    if (seq.draftTokenIds.length > 0 && fromToken === seq.numTokens - 1) return Math.min(seq.numTokensWithDrafts - fromToken, budget);
    const remaining = seq.numTokens - fromToken;
    let n = Math.min(remaining, budget);
    const threshold = this.limits.longPrefillTokenThreshold;
    if (remaining > 1 && threshold > 0) n = Math.min(n, threshold);
    if (seq.wholeImageRuns) n = chunkKeepingRunsWhole(seq.wholeImageRuns, fromToken, n, Math.min(remaining, budget));
    if (n >= remaining || n === 0) return n;
    const long = threshold > 0 && seq.numPromptTokens > threshold;
    if (this.partial >= this.limits.maxNumPartialPrefills || (long && this.longPartial >= this.limits.maxLongPartialPrefills)) return 0;
    this.partial++;
    if (long) this.longPartial++;
    return n;
  }
}

interface ScheduledSequence {
  seq: Sequence;
  /** Tokens computed this step: tokenIds[numComputedTokens .. numComputedTokens + numNewTokens). */
  numNewTokens: number;
  /** True when this step reaches the sequence's last token, so its logits are sampled. */
  sample: boolean;
}

export interface SchedulePlan {
  scheduled: ScheduledSequence[];
  /** Sequences preempted while building this plan (back in the waiting queue). */
  preempted: Sequence[];
  numScheduledTokens: number;
  prefixCacheQueries: number;
  prefixCacheHits: number;
  /** Of newly scheduled requests (not preempted ones coming back): prompt tokens from the cache, and cached ones recomputed. */
  promptTokensCached: number;
  promptTokensRecomputed: number;
  /** Prompt tokens of those newly scheduled requests (remote prefills count when their pull ends). */
  promptTokensAdmitted: number;
}

export class Scheduler {
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  /** Paused sequences, longest paused first: the first whose KV is reclaimed when blocks run short. */
  private readonly paused = new Set<Sequence>();
  /** Resumed sequences that kept their KV, waiting for a batch slot to run again. */
  private readonly resuming: Sequence[] = [];
  private readonly bySeqId = new Map<string, Sequence>();
  /** Waiting sequences the last schedule() passed over for their adapter (not loaded, or over --max-loras). */
  private adapterSkipped = 0;
  /** Sequences holding blocks for their whole prompt while its KV is pulled from a prefill replica (vLLM's WAITING_FOR_REMOTE_KVS). */
  private readonly awaitingKv = new Set<Sequence>();

  constructor(
    readonly config: SchedulerConfig,
    readonly kv: BlockManager,
  ) {}

  /** Sequences waiting for a batch slot (resumed ones holding their KV included). */
  get numWaiting(): number {
    return this.waiting.length + this.resuming.length + this.awaitingKv.size;
  }

  /** Of numWaiting, those waiting for their prompt's KV from a prefill replica. */
  get numAwaitingKv(): number {
    return this.awaitingKv.size;
  }

  get numRunning(): number {
    return this.running.length;
  }

  get numPaused(): number {
    return this.paused.size;
  }

  /** Of numWaiting, those the last step passed over for their LoRA adapter (vLLM's skipped waiting requests). */
  get numAdapterDeferred(): number {
    return this.adapterSkipped;
  }

  hasWork(): boolean {
    return this.waiting.length > 0 || this.running.length > 0 || this.resuming.length > 0;
  }

  addSequence(seq: Sequence): void {
    if (this.bySeqId.has(seq.seqId)) throw new Error(`duplicate sequence id ${seq.seqId}`);
    seq.status = 'waiting';
    this.bySeqId.set(seq.seqId, seq);
    this.enqueueWaiting(seq, false);
  }

  /**
   * Adds an n > 1 child that starts where its parent's prompt ends, sharing the parent's
   * KV. Returns the block copies the runner must make before the next step; when the
   * batch is full or no block is free, the child waits and recomputes its prompt instead.
   */
  addForkedSequence(parent: Sequence, child: Sequence, numSharedTokens: number): BlockCopy[] {
    if (this.bySeqId.has(child.seqId)) throw new Error(`duplicate sequence id ${child.seqId}`);
    this.bySeqId.set(child.seqId, child);
    const pairs = this.running.length < this.config.maxNumSeqs ? this.kv.fork(parent.seqId, child.seqId, numSharedTokens) : null;
    if (pairs === null) {
      child.status = 'waiting';
      this.enqueueWaiting(child, false);
      return [];
    }
    child.numComputedTokens = numSharedTokens;
    child.encoded = parent.encoded;
    child.firstScheduledAt = parent.firstScheduledAt;
    child.numCachedPromptTokens = parent.numCachedPromptTokens;
    child.status = 'running';
    this.running.push(child);
    return pairs;
  }

  schedule(): SchedulePlan {
    const plan: SchedulePlan = {
      scheduled: [],
      preempted: [],
      numScheduledTokens: 0,
      prefixCacheQueries: 0,
      prefixCacheHits: 0,
      promptTokensCached: 0,
      promptTokensRecomputed: 0,
      promptTokensAdmitted: 0,
    };
    let budget = this.config.maxNumBatchedTokens;
    const scheduledIds = new Set<string>();
    const prefills = new PartialPrefillBudget(this.config.partialPrefills ?? NO_PARTIAL_LIMITS);

    this.adapterSkipped = 0;
    this.rejoinResumed();
    // 1. Running sequences, in order; preempt from the bottom when blocks run out (after freeing
    // the KV of paused sequences).
    for (let i = 0; i < this.running.length && budget > 0; ) {
      const seq = this.running[i];
      const numNew = prefills.chunk(seq, seq.numComputedTokens, budget);
      if (numNew <= 0) {
        i++;
        continue;
      }
      if (seq.draftTokenIds.length > 0) seq.draftTokenIds.length = Math.max(0, seq.numComputedTokens + numNew - seq.numTokens);
      if (this.kv.allocate(seq, seq.numComputedTokens, numNew)) {
        plan.scheduled.push({ seq, numNewTokens: numNew, sample: seq.numComputedTokens + numNew >= seq.numTokens });
        scheduledIds.add(seq.seqId);
        budget -= numNew;
        i++;
        continue;
      }
      if (this.reclaimPausedKv()) continue;
      const victim = this.pickVictim();
      const victimIndex = this.running.indexOf(victim);
      if (scheduledIds.delete(victim.seqId)) {
        const at = plan.scheduled.findIndex((s) => s.seq === victim);
        budget += plan.scheduled[at].numNewTokens;
        plan.scheduled.splice(at, 1);
      }
      this.preempt(victim, victimIndex);
      plan.preempted.push(victim);
      if (victim === seq) continue; // `i` now points at the next sequence
      if (victimIndex < i) i--;
    }

    // 2. Waiting sequences join, unless this step had to preempt (memory is tight). One that
    // would exceed the partial-prefill limits, or whose adapter is not loaded or would exceed
    // --max-loras, stays in place and those behind it may join (vLLM skips it the same way).
    const adapters = this.runningAdapters();
    for (let w = 0; plan.preempted.length === 0 && w < this.waiting.length && budget > 0 && this.running.length < this.config.maxNumSeqs; ) {
      const seq = this.waiting[w];
      if (!this.adapterAdmits(seq, adapters)) {
        this.adapterSkipped++;
        w++;
        continue;
      }
      const firstTime = seq.numComputedTokens === 0 && seq.firstScheduledAt === null;
      const hit: PrefixHit = seq.skipPrefixCache ? { blockIds: [], numTokens: 0 } : this.prefixHit(seq);
      if (seq.remotePrefill?.state === 'pending' && this.config.remoteKv) {
        if (this.awaitRemoteKv(seq, hit, plan)) continue;
        if (this.reclaimPausedKv()) continue;
        break;
      }
      const numNew = prefills.chunk(seq, hit.numTokens, budget);
      if (numNew <= 0) {
        w++;
        continue;
      }
      if (!this.kv.allocate(seq, hit.numTokens, numNew, hit)) {
        if (this.reclaimPausedKv()) continue;
        break;
      }
      this.waiting.splice(w, 1);
      if (!seq.skipPrefixCache && this.kv.enablePrefixCaching) {
        plan.prefixCacheQueries += seq.numTokens;
        plan.prefixCacheHits += hit.numTokens;
      }
      if (firstTime) {
        seq.numCachedPromptTokens = hit.numTokens;
        plan.promptTokensCached += hit.numTokens;
        plan.promptTokensRecomputed += hit.recomputedTokens ?? 0;
        plan.promptTokensAdmitted += seq.numPromptTokens;
        seq.firstScheduledAt = nowMs();
      }
      seq.numComputedTokens = hit.numTokens;
      seq.status = 'running';
      if (seq.lora) adapters?.add(seq.lora.id);
      this.running.push(seq);
      plan.scheduled.push({ seq, numNewTokens: numNew, sample: seq.numComputedTokens + numNew === seq.numTokens });
      budget -= numNew;
    }

    plan.numScheduledTokens = this.config.maxNumBatchedTokens - budget;
    return plan;
  }

  /** The sequence's prefix-cache hit, backed off to a block before any image run it would end inside. */
  private prefixHit(seq: Sequence): PrefixHit {
    const hit = this.kv.findPrefixHit(seq);
    if (!seq.wholeImageRuns || hit.blockIds.length === 0) return hit;
    const keep = hitBlocksKeepingRunsWhole(seq.wholeImageRuns, hit.numTokens, hit.numTokens / hit.blockIds.length);
    return keep === null ? hit : this.kv.findPrefixHit(seq, keep);
  }

  /**
   * Gives a waiting sequence blocks for its whole prompt (its local prefix hit first) and sets it
   * aside while the rest is pulled; takes no token budget. False when the blocks are not free.
   */
  private awaitRemoteKv(seq: Sequence, hit: PrefixHit, plan: SchedulePlan): boolean {
    if (!this.kv.allocate(seq, hit.numTokens, seq.numTokens - hit.numTokens, hit)) return false;
    this.waiting.splice(this.waiting.indexOf(seq), 1);
    if (this.kv.enablePrefixCaching) {
      plan.prefixCacheQueries += seq.numTokens;
      plan.prefixCacheHits += hit.numTokens;
    }
    seq.numComputedTokens = hit.numTokens;
    seq.numCachedPromptTokens = hit.numTokens;
    seq.firstScheduledAt = nowMs();
    seq.remotePrefill!.state = 'pulling';
    this.awaitingKv.add(seq);
    this.config.remoteKv!.start(seq, hit.numTokens);
    return true;
  }

  isAwaitingKv(seq: Sequence): boolean {
    return this.awaitingKv.has(seq);
  }

  /**
   * Ends a pull: `loadedTokens` of the prompt are now in the sequence's blocks (vLLM: a whole
   * prompt loaded leaves its last token to compute, for the logits), or null when the pull
   * failed and what it lacks is prefilled locally in the same blocks. The sequence then joins
   * the batch as a resumed one. False when it no longer waits (aborted, paused).
   */
  completeRemoteKv(seq: Sequence, loadedTokens: number | null): boolean {
    if (!this.awaitingKv.delete(seq)) return false;
    seq.remotePrefill!.state = 'done';
    if (loadedTokens !== null && loadedTokens > seq.numComputedTokens) {
      seq.numComputedTokens = Math.min(loadedTokens, seq.numTokens - 1);
      seq.numCachedPromptTokens = seq.numComputedTokens;
      this.kv.cacheComputedBlocks(seq, seq.numComputedTokens);
    }
    seq.status = 'paused';
    this.resuming.push(seq);
    return true;
  }

  /**
   * Advances the scheduled sequences by the tokens computed in this step and appends the
   * tokens sampled for them (seqId -> token). Fully computed blocks enter the prefix cache.
   */
  updateFromOutput(plan: SchedulePlan, sampled: ReadonlyMap<string, number>, sitOut?: ReadonlySet<string>, verified?: ReadonlyMap<string, readonly number[]>): void {
    for (const { seq, numNewTokens } of plan.scheduled) {
      const drafted = seq.draftTokenIds.length > 0;
      seq.draftTokenIds = NO_DRAFTS;
      if (seq.status !== 'running') continue; // finished (aborted) while the step ran
      const kept = verified?.get(seq.seqId);
      if (kept !== undefined) {
        this.advanceVerified(seq, kept);
        continue;
      }
      // Sat out (its grammar mask was late: computed again next step), or drafts left unverified
      // (its request ended in the step): nothing past its tokens is known, and the blocks its
      // drafts took go back.
      if (drafted) this.kv.trim(seq.seqId, seq.numTokens);
      if (drafted || sitOut?.has(seq.seqId)) continue;
      seq.numComputedTokens += numNewTokens;
      this.kv.cacheComputedBlocks(seq, seq.numComputedTokens);
      const token = sampled.get(seq.seqId);
      if (token !== undefined) seq.tokenIds.push(token);
    }
  }

  /**
   * A decode step that verified drafts kept `tokens` (the accepted drafts and the token sampled
   * after them): the K/V of all but the last are now in the cache; the blocks that held rejected
   * drafts go back.
   */
  private advanceVerified(seq: Sequence, tokens: readonly number[]): void {
    if (tokens.length === 0) return;
    for (const token of tokens) seq.tokenIds.push(token);
    seq.numComputedTokens = seq.numTokens - 1;
    this.kv.trim(seq.seqId, seq.numTokens);
    this.kv.cacheComputedBlocks(seq, seq.numComputedTokens);
  }

  /** Running sequences whose next step is a decode (their prompt is computed): those that may draft. */
  decodingSequences(): Sequence[] {
    return this.running.filter((seq) => seq.numComputedTokens === seq.numTokens - 1);
  }

  /** Removes the sequences from the queues and frees their KV blocks at once. */
  finishSequences(seqIds: Iterable<string>): void {
    for (const id of seqIds) {
      const seq = this.bySeqId.get(id);
      if (!seq) continue;
      this.bySeqId.delete(id);
      this.unqueue(seq);
      seq.status = 'finished';
      this.kv.free(id);
    }
  }

  /**
   * Sets the sequences aside: out of the batch and the queue, keeping their KV blocks (and so
   * their K/V exactly) until resumed or until blocks run short (reclaimPausedKv).
   */
  pauseSequences(seqIds: Iterable<string>): void {
    for (const id of seqIds) {
      const seq = this.bySeqId.get(id);
      if (!seq || seq.status === 'finished' || this.paused.has(seq)) continue;
      this.unqueue(seq);
      // Nothing computed yet: whatever it holds (blocks of a failed first step) goes back.
      if (seq.numComputedTokens === 0) this.kv.free(seq.seqId);
      seq.status = 'paused';
      this.paused.add(seq);
    }
  }

  /**
   * Takes paused sequences back: one that kept its KV rejoins the batch where it stopped, as soon
   * as a slot is free; one whose KV was reclaimed goes to the front of the waiting queue.
   */
  resumeSequences(seqIds: Iterable<string>): void {
    for (const id of seqIds) {
      const seq = this.bySeqId.get(id);
      if (!seq || seq.status !== 'paused' || !this.paused.delete(seq)) continue;
      if (seq.numComputedTokens > 0) {
        this.resuming.push(seq);
        continue;
      }
      seq.status = 'waiting';
      this.enqueueWaiting(seq, true);
    }
  }

  /** Resumed sequences holding their KV go back to the batch while it has room (and --max-loras allows their adapter). */
  private rejoinResumed(): void {
    const adapters = this.runningAdapters();
    for (let r = 0; r < this.resuming.length && this.running.length < this.config.maxNumSeqs; ) {
      const seq = this.resuming[r];
      if (!this.adapterAdmits(seq, adapters)) {
        this.adapterSkipped++;
        r++;
        continue;
      }
      this.resuming.splice(r, 1);
      if (seq.lora) adapters?.add(seq.lora.id);
      seq.status = 'running';
      this.running.push(seq);
    }
  }

  /** The adapter ids of the running batch (null without --enable-lora). */
  private runningAdapters(): Set<number> | null {
    if (!this.config.lora) return null;
    const ids = new Set<number>();
    for (const seq of this.running) if (seq.lora) ids.add(seq.lora.id);
    return ids;
  }

  /** Whether the sequence's adapter (if any) is loaded and fits the batch's --max-loras with `adapters`. */
  private adapterAdmits(seq: Sequence, adapters: Set<number> | null): boolean {
    const lora = this.config.lora;
    if (seq.lora === null || !lora || !adapters) return true;
    if (!adapters.has(seq.lora.id) && adapters.size >= lora.maxLoras) return false;
    return lora.ready(seq.lora);
  }

  /** The names of the adapters of running and of waiting sequences (vllm:lora_requests_info), each in queue order. */
  adapterNames(): { running: string[]; waiting: string[] } {
    const names = (queues: readonly Sequence[][]) => [...new Set(queues.flatMap((queue) => queue.flatMap((seq) => (seq.lora ? [seq.lora.name] : []))))];
    return { running: names([this.running]), waiting: names([this.waiting, this.resuming]) };
  }

  /** Adapter ids of the sequences running or waiting to run (a paused one's may be dropped and read again on resume). */
  adapterIdsInUse(): Set<number> {
    const ids = new Set<number>();
    for (const queue of [this.running, this.waiting, this.resuming]) for (const seq of queue) if (seq.lora) ids.add(seq.lora.id);
    return ids;
  }

  /**
   * Frees the KV of the longest-paused sequence that holds any (else of a resumed one still
   * waiting for a slot), which is then recomputed when it runs again. False when none holds KV.
   */
  private reclaimPausedKv(): boolean {
    for (const seq of this.paused) {
      if (seq.numComputedTokens === 0) continue;
      this.releaseKv(seq);
      return true;
    }
    const seq = this.resuming.shift();
    if (!seq) return false;
    this.releaseKv(seq);
    seq.status = 'waiting';
    this.enqueueWaiting(seq, true);
    return true;
  }

  private unqueue(seq: Sequence): void {
    if (this.awaitingKv.delete(seq)) {
      // Its pull's result is dropped; were it paused, it would prefill locally on resume.
      seq.remotePrefill!.state = 'done';
      return;
    }
    if (seq.status === 'paused') {
      if (!this.paused.delete(seq)) this.resuming.splice(this.resuming.indexOf(seq), 1);
      return;
    }
    const queue = seq.status === 'running' ? this.running : this.waiting;
    const at = queue.indexOf(seq);
    if (at >= 0) queue.splice(at, 1);
  }

  private pickVictim(): Sequence {
    if (this.config.policy === 'fcfs') return this.running[this.running.length - 1];
    // Lowest rank: largest priority value, then latest arrival.
    return this.running.reduce((worst, s) => (compareRank(s, worst) > 0 ? s : worst));
  }

  private preempt(seq: Sequence, index: number): void {
    this.running.splice(index, 1);
    this.releaseKv(seq);
    seq.status = 'waiting';
    this.enqueueWaiting(seq, true);
  }

  /** Frees the sequence's blocks: it is recomputed from its tokens when scheduled again. */
  private releaseKv(seq: Sequence): void {
    this.kv.free(seq.seqId);
    seq.draftTokenIds = NO_DRAFTS;
    seq.numComputedTokens = 0;
    seq.encoded = false;
    seq.numPreemptions++;
  }

  private enqueueWaiting(seq: Sequence, preempted: boolean): void {
    if (this.config.policy === 'fcfs') {
      if (preempted) this.waiting.unshift(seq);
      else this.waiting.push(seq);
      return;
    }
    let at = this.waiting.length;
    while (at > 0 && compareRank(this.waiting[at - 1], seq) > 0) at--;
    this.waiting.splice(at, 0, seq);
  }
}

/** Negative when a ranks before b (lower priority value first, then earlier arrival). */
function compareRank(a: Sequence, b: Sequence): number {
  return a.priority - b.priority || a.arrivalOrder - b.arrivalOrder;
}
