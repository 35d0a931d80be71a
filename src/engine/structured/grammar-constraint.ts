// One sequence's structured-output state: an xgrammar matcher that advances with every
// sampled token and the bitmask of tokens the grammar allows next (prepare() fills it,
// apply() sets -inf on the rest). The engine runs these in its grammar worker thread
// (grammar-worker.ts) and samples through RemoteConstraint (grammar-client.ts), so the
// bitmasks are filled while the model runs; used directly, it works in any thread.
// Preemption needs no replay: a preempted sequence keeps its sampler (and this matcher),
// only its KV cache is recomputed, so the matcher already stands after its last token.
//
// Speculative decoding: prepare(drafts) also fills the masks of the positions after each draft
// (accepting them, then rolling the matcher back), so verifying a draft at position j reads the
// mask of the j-th token accepted since prepare().
//
// `enabled` is for reasoning models: a constraint created disabled lets tokens through
// untouched (and does not advance) until enable() is called, e.g. when the reasoning
// parser sees the end of the reasoning section; from the next token on it constrains.

import type { SequenceConstraint } from '../sampling/logits-processor';
import type { GrammarMatcher } from './xgrammar';

export class GrammarConstraint implements SequenceConstraint {
  readonly hard = true;
  /** The masks prepare() filled: the next token's, then one after each draft the grammar takes. */
  private masks: Int32Array[] = [];
  /** Tokens accepted since prepare(): which of `masks` apply() uses. */
  private position = 0;
  private taken = 0;
  private disposed = false;

  constructor(
    private readonly matcher: GrammarMatcher,
    private readonly vocabSize: number,
    private active = true,
  ) {}

  get enabled(): boolean {
    return this.active;
  }

  get terminated(): boolean {
    return this.active && !this.disposed && this.matcher.isTerminated();
  }

  enable(): void {
    this.active = true;
  }

  /**
   * Fills the mask of the next token and, for each draft the grammar accepts, of the token after
   * it; stops at the first draft it rejects or that ends it (the engine verifies only the drafts
   * before that one: draftsTaken).
   */
  async prepare(drafts: readonly number[] = []): Promise<void> {
    this.masks = [];
    this.position = 0;
    this.taken = 0;
    if (!this.active || this.disposed || this.matcher.isTerminated()) return;
    this.masks.push(await this.matcher.getNextTokenBitmask());
    try {
      for (const token of drafts) {
        if (!this.matcher.acceptToken(token)) break;
        this.taken++;
        if (this.matcher.isTerminated()) break;
        this.masks.push(await this.matcher.getNextTokenBitmask());
      }
    } finally {
      // The kept tokens are accepted as they are verified (or sent with the next job).
      if (this.taken > 0) this.matcher.rollBack(this.taken);
    }
  }

  /** Of the drafts given to the last prepare(), how many the grammar accepts in order. */
  get draftsTaken(): number {
    return this.taken;
  }

  /** Positions the last prepare() has a mask for (1 + the drafts the grammar took, or 0). */
  get preparedMasks(): number {
    return this.masks.length;
  }

  /** Copies a prepared bitmask (ceil(vocab / 32) words, bit set = allowed) into `target` at `offset`. */
  writeMask(target: Int32Array, offset: number, position = 0): void {
    const mask = this.masks[position];
    if (mask === undefined) throw new Error(`grammar constraint: no mask prepared for position ${position}`);
    target.set(mask, offset);
  }

  apply(scores: Float32Array): void {
    if (!this.active) return;
    const mask = this.masks[this.position];
    if (mask === undefined) throw new Error(this.masks.length === 0 ? 'grammar constraint: apply() before prepare()' : 'grammar constraint: no grammar mask prepared for this position (past the drafts the grammar took)');
    applyBitmask(scores, mask, 0, this.vocabSize);
  }

  accept(tokenId: number): void {
    if (!this.active) return;
    this.position++;
    if (!this.matcher.acceptToken(tokenId)) {
      throw new Error(`structured outputs: the grammar rejected token ${tokenId}`);
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.matcher.dispose();
  }
}

/** Sets -inf on every token whose bit is 0 in `mask[offset ..]` (xgrammar's layout: 32 tokens per word). */
export function applyBitmask(scores: Float32Array, mask: Int32Array, offset: number, vocabSize: number): void {
  const words = Math.ceil(vocabSize / 32);
  for (let word = 0; word < words; word++) {
    const bits = mask[offset + word];
    if (bits === -1) continue; // all 32 allowed
    const base = word * 32;
    const end = Math.min(base + 32, vocabSize);
    for (let id = base; id < end; id++) if ((bits & (1 << (id - base))) === 0) scores[id] = -Infinity;
  }
}
