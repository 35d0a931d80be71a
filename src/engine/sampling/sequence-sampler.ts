// Per-sequence sampling: logits processors in vLLM v1's order, then greedy or seeded
// random sampling, with logprobs taken from the RAW logits (vLLM default logprobs mode).
//
// Order (vLLM v1): the processor registry (logits-processor.ts: structured-output bitmask →
// allowed_token_ids → bad_words → min_tokens → logit_bias) → repetition / frequency /
// presence penalties → [greedy: argmax] → temperature → min_p → top_k → top_p → draw.
// ignore_eos does not touch the logits (vLLM only skips the EOS stop check).

import type { PositionLogprobs, SamplingParams } from '../types';
import { isGreedy } from '../sampling-params';
import { logSumExp, positionLogprobs, wantsLogprobs, type LogprobsRequest } from './logprobs';
import { createSequenceRng, type Rng } from './rng';
import { computeSamplingWeights } from './filters';
import type { SamplingWorkspace } from './workspace';
import { createLogitsProcessors, type LogitsProcessor, type LogitsProcessorFactory, type SequenceConstraint } from './logits-processor';
import { LOGITS_PROCESSORS } from './builtin-processors';
import { argmax } from './argmax';

export interface SequenceSamplerInit {
  params: SamplingParams;
  promptTokenIds: readonly number[];
  vocabSize: number;
  /** Model EOS ids (tokenizer EOS + generation_config eos_token_id): banned while below min_tokens. */
  eosTokenIds: readonly number[];
  /** params.bad_words encoded with encodeBadWords(); required when bad_words is non-empty. */
  badWordsTokenIds?: readonly (readonly number[])[];
  /** Overrides params.seed (n > 1 children use childSeed(seed, index)); null → global source. */
  seed?: number | null;
  /** This sequence's structured-output state (a grammar matcher), when the request has structured_outputs. */
  constraint?: SequenceConstraint | null;
  /** The processor registry (default: LOGITS_PROCESSORS). */
  processors?: readonly LogitsProcessorFactory[];
}

export interface SampleResult {
  tokenId: number;
  /** Logprob of the token under the raw model distribution; NaN when logprobs were not asked. */
  logprob: number;
  /** Present when params.logprobs or logprob_token_ids asked for them. */
  logprobs: PositionLogprobs | null;
}

export class SequenceSampler {
  readonly params: SamplingParams;
  private readonly vocabSize: number;
  private readonly rng: Rng;
  private readonly greedy: boolean;
  private readonly logprobsRequest: LogprobsRequest;
  private readonly wantLogprobs: boolean;

  private readonly processors: LogitsProcessor[];
  /** Processors told of every sampled token (a grammar matcher). */
  private readonly acceptors: LogitsProcessor[];
  /** Processors whose bans win when all tokens are banned (see logits-processor.ts). */
  private readonly hard: LogitsProcessor[];

  private readonly usePenalties: boolean;
  /** Token → 1 when seen in prompt or output (repetition penalty). */
  private readonly seenMask: Uint8Array | null;
  private readonly seenList: number[] = [];
  /** Token → output count (frequency / presence penalties). */
  private readonly outputCounts: Int32Array | null;
  private readonly outputDistinct: number[] = [];

  private readonly outputs: number[] = [];
  private cumulative = 0;

  constructor(init: SequenceSamplerInit) {
    const p = init.params;
    this.params = p;
    this.vocabSize = init.vocabSize;
    this.greedy = isGreedy(p);
    this.rng = createSequenceRng(init.seed !== undefined ? init.seed : p.seed);
    this.logprobsRequest = { numTop: p.logprobs, tokenIds: p.logprob_token_ids };
    this.wantLogprobs = wantsLogprobs(this.logprobsRequest);

    if (p.bad_words.length > 0 && init.badWordsTokenIds == null) {
      throw new Error('SequenceSampler: bad_words need badWordsTokenIds (encodeBadWords)');
    }
    this.processors = createLogitsProcessors(
      {
        params: p,
        vocabSize: init.vocabSize,
        eosTokenIds: init.eosTokenIds,
        badWordsTokenIds: init.badWordsTokenIds,
        constraint: init.constraint ?? null,
      },
      init.processors ?? LOGITS_PROCESSORS,
    );
    this.acceptors = this.processors.filter((proc) => proc.accept !== undefined);
    this.hard = this.processors.filter((proc) => proc.hard);

    const useRepetition = p.repetition_penalty !== 1;
    const useOutputPenalties = p.frequency_penalty !== 0 || p.presence_penalty !== 0;
    this.usePenalties = useRepetition || useOutputPenalties;
    this.seenMask = useRepetition ? new Uint8Array(init.vocabSize) : null;
    this.outputCounts = useOutputPenalties ? new Int32Array(init.vocabSize) : null;
    if (this.seenMask) for (const id of init.promptTokenIds) this.markSeen(id);
  }

  /** Tokens sampled so far (the sequence's output). */
  get outputTokenIds(): readonly number[] {
    return this.outputs;
  }

  /** Sum of the sampled tokens' raw logprobs; null when logprobs were not asked (as vLLM). */
  get cumulativeLogprob(): number | null {
    return this.wantLogprobs ? this.cumulative : null;
  }

  /**
   * Samples the next token from `logits[offset .. offset+vocabSize)` (the runner's
   * last-position logits of this sequence; never modified) and records it as output.
   */
  sample(logits: Float32Array, offset: number, ws: SamplingWorkspace): SampleResult {
    const V = this.vocabSize;
    let tokenId: number;
    if (this.greedy && this.processors.length === 0 && !this.usePenalties) {
      // Nothing changes the scores: the row's own argmax, without copying it (greedy decode's path).
      tokenId = argmax(logits, offset, V);
    } else {
      const scores = ws.scores;
      scores.set(logits.subarray(offset, offset + V));
      this.applyLogitsProcessors(scores);
      tokenId = this.greedy ? argmax(scores, 0, V) : this.drawRandom(ws);
    }

    return this.record(logits, offset, tokenId);
  }

  /**
   * Speculative decoding: decides on a drafted token from the logits of its position, recording
   * the token that is kept. Greedy keeps the draft when it is the argmax. Random sampling keeps it
   * with probability p(draft) under the processed distribution and otherwise draws from that
   * distribution without the draft (renormalised): the proposers draft deterministically (a
   * one-hot q), so this is the rejection rule that leaves the output distributed exactly as p.
   */
  verify(logits: Float32Array, offset: number, draftTokenId: number, ws: SamplingWorkspace): SampleResult & { accepted: boolean } {
    if (this.greedy) {
      const result = this.sample(logits, offset, ws);
      return { ...result, accepted: result.tokenId === draftTokenId };
    }
    const V = this.vocabSize;
    const scores = ws.scores;
    scores.set(logits.subarray(offset, offset + V));
    this.applyLogitsProcessors(scores);
    const total = computeSamplingWeights(ws, V, this.params);
    let tokenId: number;
    let accepted: boolean;
    if (!(total > 0)) {
      tokenId = argmax(ws.scores, 0, V);
      accepted = tokenId === draftTokenId;
    } else {
      const draftWeight = draftTokenId >= 0 && draftTokenId < V ? ws.weights[draftTokenId] : 0;
      accepted = this.rng.nextDouble() * total < draftWeight;
      if (accepted) {
        tokenId = draftTokenId;
      } else {
        ws.weights[draftTokenId] = 0;
        const rest = total - draftWeight;
        // Rounding can leave nothing but the draft: it is then the only token to keep.
        tokenId = rest > 0 ? this.drawFromWeights(ws.weights, rest) : draftTokenId;
        accepted = tokenId === draftTokenId;
      }
    }
    return { ...this.record(logits, offset, tokenId), accepted };
  }

  /** Logprobs of the kept token (when asked) and the bookkeeping every kept token goes through. */
  private record(logits: Float32Array, offset: number, tokenId: number): SampleResult {
    const V = this.vocabSize;
    let logprob = NaN;
    let logprobs: PositionLogprobs | null = null;
    if (this.wantLogprobs) {
      const logZ = logSumExp(logits, offset, V);
      logprobs = positionLogprobs(logits, offset, V, tokenId, this.logprobsRequest, logZ);
      logprob = logprobs.chosen.logprob;
      this.cumulative += logprob;
    }
    this.recordToken(tokenId);
    return { tokenId, logprob, logprobs };
  }

  /** Applies every logits processor up to (not including) temperature, in place. */
  applyLogitsProcessors(scores: Float32Array): void {
    const original = this.hard.length > 0 ? scores.slice() : null;
    for (const proc of this.processors) proc.apply(scores, this.outputs);
    if (original && !anyFinite(scores, this.vocabSize)) {
      // The soft processors banned what the hard ones left: the hard ones win.
      scores.set(original);
      for (const proc of this.hard) proc.apply(scores, this.outputs);
    }
    if (this.usePenalties) this.applyPenalties(scores);
  }

  private applyPenalties(scores: Float32Array): void {
    const p = this.params;
    if (this.seenMask) {
      const rp = p.repetition_penalty;
      for (const id of this.seenList) {
        const s = scores[id];
        scores[id] = s > 0 ? s / rp : s * rp;
      }
    }
    if (this.outputCounts) {
      const counts = this.outputCounts;
      for (const id of this.outputDistinct) {
        scores[id] -= p.frequency_penalty * counts[id] + p.presence_penalty;
      }
    }
  }

  /** Temperature → min_p → top_k → top_p on ws.scores, then one draw with this sequence's generator. */
  private drawRandom(ws: SamplingWorkspace): number {
    const V = this.vocabSize;
    const total = computeSamplingWeights(ws, V, this.params);
    if (!(total > 0)) return argmax(ws.scores, 0, V); // every token banned: nothing sensible to draw
    return this.drawFromWeights(ws.weights, total);
  }

  /** Inverse-CDF draw: one uniform per draw keeps seeded streams short and batch-independent. */
  private drawFromWeights(weights: Float32Array, total: number): number {
    const V = this.vocabSize;
    const target = this.rng.nextDouble() * total;
    let acc = 0;
    let last = -1;
    for (let i = 0; i < V; i++) {
      const w = weights[i];
      if (w === 0) continue;
      acc += w;
      last = i;
      if (acc > target) return i;
    }
    return last;
  }

  private recordToken(id: number): void {
    this.outputs.push(id);
    for (const proc of this.acceptors) proc.accept!(id);
    if (this.seenMask) this.markSeen(id);
    if (this.outputCounts) {
      if (this.outputCounts[id] === 0) this.outputDistinct.push(id);
      this.outputCounts[id]++;
    }
  }

  private markSeen(id: number): void {
    const mask = this.seenMask!;
    if (id >= 0 && id < this.vocabSize && mask[id] === 0) {
      mask[id] = 1;
      this.seenList.push(id);
    }
  }

}

function anyFinite(scores: Float32Array, n: number): boolean {
  for (let i = 0; i < n; i++) if (scores[i] > -Infinity) return true;
  return false;
}
