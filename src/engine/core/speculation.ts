// Speculative decoding in the step loop: before a step is scheduled, the proposer drafts tokens
// for the sequences that decode; the step computes them after each sequence's last token; then
// the engine keeps the longest prefix of them the target model agrees with (SequenceSampler.verify)
// and one token more (EngineCore.verifyDrafts).

import type { SpecDecodingStats } from '../types';
import type { DraftProposer, DraftRequest } from '../speculative/proposer';
import type { SpeculativeConfig } from '../speculative/speculative-config';
import type { RequestState } from './request-state';
import type { Sequence } from './sequence';
import { effectiveMaxTokens } from './validate-request';

export class Speculation {
  constructor(
    readonly config: SpeculativeConfig,
    readonly proposer: DraftProposer,
    private readonly maxModelLen: number,
  ) {}

  /** False while the running batch has reached disable_by_batch_size (vLLM's rule: running queue size >= the threshold). */
  activeAt(numRunning: number): boolean {
    const limit = this.config.disableByBatchSize;
    return limit === null || numRunning < limit;
  }

  /** Gives each decoding sequence its drafts (Sequence.draftTokenIds). */
  async draft(decoding: readonly Sequence[], requests: ReadonlyMap<string, RequestState>): Promise<void> {
    const asks: DraftRequest[] = [];
    const seqs: Sequence[] = [];
    for (const seq of decoding) {
      const maxDrafts = this.maxDraftsFor(seq, requests.get(seq.requestId));
      if (maxDrafts <= 0) continue;
      asks.push({ seqId: seq.seqId, tokenIds: seq.tokenIds, numPromptTokens: seq.numPromptTokens, maxDrafts });
      seqs.push(seq);
    }
    if (asks.length === 0) return;
    const drafts = await this.proposer.propose(asks);
    for (let i = 0; i < seqs.length; i++) {
      const tokens = drafts[i];
      // A proposer may ask for a sequence that finished meanwhile (an abort during a draft model's pass).
      if (tokens && tokens.length > 0 && seqs[i].status === 'running') seqs[i].draftTokenIds = tokens.slice(0, asks[i].maxDrafts);
    }
  }

  /**
   * How many tokens the sequence may draft: k, less near max_tokens and max_model_len (a step keeps
   * at most drafts + 1 tokens); none before its request forked (n > 1 samples its first tokens from
   * the prompt's logits), or for an encoder-decoder sequence.
   */
  private maxDraftsFor(seq: Sequence, state: RequestState | undefined): number {
    if (!state || !state.forked || seq.encoderInput !== null) return 0;
    const completion = state.completions[seq.index];
    if (completion.finished) return 0;
    const leftInRequest = effectiveMaxTokens(state.request, this.maxModelLen) - completion.outputTokenIds.length - 1;
    const leftInContext = this.maxModelLen - seq.numTokens - 1;
    return Math.min(this.config.numSpeculativeTokens, leftInRequest, leftInContext);
  }

  release(seqId: string): void {
    this.proposer.release(seqId);
  }
}

/** One step's counts, in vLLM's terms (a "draft" is one sequence's drafts in one step). */
export function emptySpecStats(k: number): SpecDecodingStats {
  return { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0, acceptedPerPosition: new Array<number>(k).fill(0) };
}
