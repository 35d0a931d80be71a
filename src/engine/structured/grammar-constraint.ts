// One sequence's structured-output state: an xgrammar matcher that advances with every
// sampled token and the bitmask of tokens the grammar allows next (prepare() fills it,
// apply() sets -inf on the rest). The engine runs these in its grammar worker thread
// (grammar-worker.ts) and samples through RemoteConstraint (grammar-client.ts), so the
// bitmasks are filled while the model runs; used directly, it works in any thread.
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

  /** Copies the prepared bitmask (ceil(vocab / 32) words, bit set = allowed) into `target` at `offset`. */
  writeMask(target: Int32Array, offset: number): void {
    if (this.bitmask === null) throw new Error('grammar constraint: writeMask() before prepare()');
    target.set(this.bitmask, offset);
  }

  apply(scores: Float32Array): void {
    if (!this.active) return;
    if (this.bitmask === null) throw new Error('grammar constraint: apply() before prepare()');
    applyBitmask(scores, this.bitmask, 0, this.vocabSize);
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
