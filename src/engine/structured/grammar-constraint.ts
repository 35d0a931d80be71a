// One sequence's structured-output state: an xgrammar matcher that advances with every
// sampled token and the bitmask of tokens the grammar allows next.
//
// The bitmask is filled in prepare(), which the engine calls while the model computes the
// step's logits, so its cost overlaps the forward pass; apply() then only sets -inf.
// Preemption needs no replay: a preempted sequence keeps its sampler (and this matcher),
// only its KV cache is recomputed, so the matcher already stands after its last token.
//
// `enabled` is for reasoning models: a constraint created disabled lets tokens through
// untouched (and does not advance) until enable() is called, e.g. when the reasoning
// parser sees the end of the reasoning section; from the next token on it constrains.

import type { SequenceConstraint } from '../sampling/logits-processor';
import type { GrammarMatcher } from './xgrammar';

export class GrammarConstraint implements SequenceConstraint {
  readonly hard = true;
  private bitmask: Int32Array | null = null;
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

  async prepare(): Promise<void> {
    if (!this.active || this.disposed || this.matcher.isTerminated()) return;
    this.bitmask = await this.matcher.getNextTokenBitmask();
  }

  apply(scores: Float32Array): void {
    if (!this.active) return;
    const mask = this.bitmask;
    if (mask === null) throw new Error('grammar constraint: apply() before prepare()');
    const V = this.vocabSize;
    for (let word = 0; word < mask.length; word++) {
      const bits = mask[word];
      if (bits === -1) continue; // all 32 allowed
      const base = word * 32;
      const end = Math.min(base + 32, V);
      for (let id = base; id < end; id++) if ((bits & (1 << (id - base))) === 0) scores[id] = -Infinity;
    }
  }

  accept(tokenId: number): void {
    if (!this.active) return;
    this.bitmask = null;
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
