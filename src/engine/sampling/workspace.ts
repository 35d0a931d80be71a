// Scratch buffers shared by every sequence's sampling call. Sampling is synchronous and
// runs one sequence at a time, so one workspace per engine (per vocab size) removes all
// per-step vocab-sized allocations from the hot loop.

export class SamplingWorkspace {
  /** Processed logits of the sequence being sampled. */
  readonly scores: Float32Array;
  /** Bit view of `scores` (radix selection works on float bit patterns). */
  readonly scoreBits: Uint32Array;
  /** Unnormalised probabilities exp(score - max). */
  readonly weights: Float32Array;
  /** Bit view of `weights`. */
  readonly weightBits: Uint32Array;
  /** Candidate token indices during threshold selection. */
  readonly candidates: Int32Array;
  /** Histogram buckets (count or probability mass) for radix selection. */
  readonly histogram: Float64Array;
  /** Descending buffer of the largest values for small-k top-k. */
  readonly smallTop: Float64Array;

  constructor(readonly vocabSize: number) {
    this.scores = new Float32Array(vocabSize);
    this.scoreBits = new Uint32Array(this.scores.buffer);
    this.weights = new Float32Array(vocabSize);
    this.weightBits = new Uint32Array(this.weights.buffer);
    this.candidates = new Int32Array(vocabSize);
    this.histogram = new Float64Array(2048);
    this.smallTop = new Float64Array(256);
  }
}
