// Per-request state in the engine core: its completions (one per sequence), what has been
// sent to the client so far, and the timestamps the metrics need.

import type { CompletionOutput, EngineRequest, FinishReason, FinishedRequestStats, PositionLogprobs, RequestOutput } from '../types';
import { OUTPUT_KIND } from '../types';
import type { KvTransferRole } from '../kv-transfer/kv-transfer-params';
import type { CompletionProcessor } from './completion-processor';
import type { Sequence } from './sequence';
import type { RequestImages } from './request-images';

export class CompletionState {
  seq: Sequence | null = null;
  readonly outputTokenIds: number[] = [];
  /** Logprobs of the output tokens: all of them, or (DELTA output) those not sent yet. */
  logprobs: PositionLogprobs[] | null;
  cumulativeLogprob = 0;
  finishReason: FinishReason | null = null;
  stopReason: string | number | null = null;
  /** Tokens already sent (DELTA output; the detokenizer keeps its own text offset). */
  sentTokens = 0;
  /** Something changed since the last output. */
  dirty = false;
  /** Set when the completion's pre-sampling work (grammar bitmask) failed; raised at sampling. */
  prepareError: Error | null = null;

  constructor(
    readonly index: number,
    readonly processor: CompletionProcessor,
    wantsLogprobs: boolean,
  ) {
    this.logprobs = wantsLogprobs ? [] : null;
  }

  get finished(): boolean {
    return this.finishReason !== null;
  }
}

export class RequestState {
  readonly completions: CompletionState[];
  /** One entry per prompt position known so far, position 0 (always null) included; they survive preemption. */
  promptLogprobs: (PositionLogprobs | null)[] | null;
  /** Completions beyond the first start once the prompt's last logits are sampled. */
  forked = false;
  promptLogprobsSent = false;
  error: string | undefined;
  /** Its part in a KV transfer between replicas (--kv-transfer-config), and the params its final output returns. */
  kvRole: KvTransferRole | null = null;
  kvTransferParams: Record<string, unknown> | null = null;
  /** A prompt's images: their placements and encoder outputs (null without images). */
  images: RequestImages | null = null;
  // Timestamps in the request clock's ms (engine/clock.ts).
  readonly arrivalMs: number;
  firstTokenMs: number | null = null;
  lastTokenMs: number | null = null;

  constructor(
    readonly request: EngineRequest,
    processors: CompletionProcessor[],
    receivedMs: number,
  ) {
    const wantsLogprobs = request.params.logprobs !== null;
    this.completions = processors.map((p, i) => new CompletionState(i, p, wantsLogprobs));
    this.promptLogprobs = request.params.prompt_logprobs !== null ? [null] : null;
    this.arrivalMs = request.arrivalTime ?? receivedMs;
  }

  get requestId(): string {
    return this.request.requestId;
  }

  get finished(): boolean {
    return this.completions.every((c) => c.finished);
  }

  /** Sequence ids that still hold (or wait for) KV blocks. */
  liveSeqIds(): string[] {
    return this.completions.filter((c) => c.seq !== null && c.seq.status !== 'finished').map((c) => c.seq!.seqId);
  }

  finishAll(reason: FinishReason, error?: string): void {
    for (const c of this.completions) {
      if (c.finished) continue;
      c.finishReason = reason;
      c.dirty = true;
    }
    if (error !== undefined) this.error = error;
  }

  /** The output to send now, per output_kind; null when there is nothing to send. */
  buildOutput(): RequestOutput | null {
    const finished = this.finished;
    const params = this.request.params;
    const kind = params.output_kind;
    const bestOfPending = (params.best_of ?? params.n) > params.n;
    if ((kind === OUTPUT_KIND.FINAL_ONLY || bestOfPending) && !finished) {
      for (const c of this.completions) c.dirty = false;
      return null;
    }
    const delta = kind === OUTPUT_KIND.DELTA && !bestOfPending;
    let chosen = this.completions;
    if (delta) chosen = chosen.length === 1 ? (chosen[0].dirty ? chosen : NONE) : chosen.filter((c) => c.dirty);
    else if (bestOfPending) chosen = bestByCumulativeLogprob(this.completions, params.n);
    const promptLogprobs = delta && this.promptLogprobsSent ? null : this.promptLogprobs;
    // The finished output is always sent: it is what ends the client's stream.
    if (chosen.length === 0 && promptLogprobs === null && !finished) return null;

    const outputs = chosen.map((c, i) => this.completionOutput(c, delta, bestOfPending ? i : c.index, finished));
    for (const c of this.completions) c.dirty = false;
    if (promptLogprobs !== null) this.promptLogprobsSent = true;
    const seq0 = this.completions[0].seq;
    return {
      requestId: this.requestId,
      promptTokenIds: this.request.promptTokenIds,
      promptLogprobs,
      outputs,
      finished,
      numCachedTokens: seq0?.numCachedPromptTokens ?? 0,
      ...(this.error !== undefined ? { error: this.error } : {}),
      ...(finished && this.kvTransferParams !== null ? { kvTransferParams: this.kvTransferParams } : {}),
    };
  }

  finishedStats(nowMs: number): FinishedRequestStats {
    const seq0 = this.completions[0].seq;
    const scheduledMs = seq0?.firstScheduledAt ?? nowMs;
    const firstMs = this.firstTokenMs ?? nowMs;
    const lastMs = this.lastTokenMs ?? nowMs;
    const reason = this.completions.find((c) => c.finishReason !== null)?.finishReason ?? 'abort';
    return {
      finishReason: reason,
      e2eLatency: (nowMs - this.arrivalMs) / 1000,
      queueTime: Math.max(0, scheduledMs - this.arrivalMs) / 1000,
      prefillTime: Math.max(0, firstMs - scheduledMs) / 1000,
      decodeTime: Math.max(0, lastMs - firstMs) / 1000,
      inferenceTime: Math.max(0, lastMs - scheduledMs) / 1000,
      promptTokens: this.request.promptTokenIds.length,
      generationTokens: this.completions.reduce((sum, c) => sum + c.outputTokenIds.length, 0),
      maxTokensParam: this.request.params.max_tokens,
      n: this.request.params.n,
      maxGenerationTokens: Math.max(0, ...this.completions.map((c) => c.outputTokenIds.length)),
    };
  }

  private completionOutput(c: CompletionState, delta: boolean, index: number, requestFinished: boolean): CompletionOutput {
    // DELTA: the detokenizer's own delta, not a slice of the whole text (which re-flattened the
    // growing text every step).
    const text = this.request.params.detokenize ? c.processor.text(c.finished || requestFinished, delta) : '';
    const out: CompletionOutput = {
      index,
      text,
      tokenIds: delta ? c.outputTokenIds.slice(c.sentTokens) : [...c.outputTokenIds],
      cumulativeLogprob: c.logprobs !== null ? c.cumulativeLogprob : null,
      // DELTA: every logprob held is unsent; once sent it is dropped, so a long stream holds none.
      logprobs: c.logprobs === null ? null : delta ? c.logprobs : [...c.logprobs],
      finishReason: c.finishReason,
      stopReason: c.stopReason,
    };
    if (delta && c.logprobs !== null) c.logprobs = [];
    c.sentTokens = c.outputTokenIds.length;
    return out;
  }
}

const NONE: CompletionState[] = [];

function bestByCumulativeLogprob(completions: CompletionState[], n: number): CompletionState[] {
  return [...completions].sort((a, b) => b.cumulativeLogprob - a.cumulativeLogprob || a.index - b.index).slice(0, n);
}
