// The logits-processor seam: per sequence, an ordered list of processors edits the raw
// scores in place before penalties, temperature and the top-k/top-p/min-p filters. Each kind
// of processor is a factory in a registry; a factory returns null when the request does not
// use it, so an unconstrained request pays for nothing.
//
// Order (vLLM v1): the structured-output bitmask first (the model runner applies it to the
// logits), then the sampler's allowed_token_ids → bad_words → min_tokens → logit_bias.
//
// A processor may be `hard`: its ban must hold even when the processors together ban every
// token (e.g. min_tokens forbids EOS exactly where a finished grammar allows only EOS). Then
// the scores are rebuilt with the hard processors alone, so the output stays valid.

import type { SamplingParams } from '../types';

export interface LogitsProcessor {
  /** Edits `scores` (one sequence, vocabSize wide) in place; `outputTokenIds` = tokens sampled so far. */
  apply(scores: Float32Array, outputTokenIds: readonly number[]): void;
  /** Told every sampled token, in order (a grammar matcher advances here). */
  accept?(tokenId: number): void;
  /** See the file comment. */
  readonly hard?: boolean;
}

/** Work a processor does before the step's logits arrive (a grammar fills its bitmask while the model runs). */
export interface PreparingLogitsProcessor extends LogitsProcessor {
  prepare(): Promise<void> | void;
}

/**
 * The per-sequence state a constraint keeps outside the sampler (a grammar matcher). Built by
 * the engine before the sequence is sampled (compilation never happens in the step loop).
 */
export interface SequenceConstraint extends PreparingLogitsProcessor {
  readonly hard: true;
  /** The constraint has accepted its end (a stop token at a complete parse): nothing may follow. */
  readonly terminated: boolean;
  /**
   * False while the constraint waits to begin (e.g. until a reasoning section ends): apply()
   * and accept() are then no-ops. enable() starts constraining from the next token on.
   */
  readonly enabled: boolean;
  enable(): void;
  /**
   * Prepares the mask of the next token and, for speculative decoding, of the position after
   * each of `drafts` the grammar accepts: the mask apply() uses is that of the tokens accepted
   * since (the matcher itself stays after the tokens accepted).
   */
  prepare(drafts?: readonly number[]): Promise<void> | void;
  /** Of the drafts given to the last prepare(), how many the grammar accepts in order (absent: none). */
  readonly draftsTaken?: number;
  /** Frees what the constraint holds (the matcher's WASM memory). */
  dispose(): void;
}

export interface LogitsProcessorContext {
  params: SamplingParams;
  vocabSize: number;
  /** Model EOS ids (tokenizer EOS + generation_config eos_token_id). */
  eosTokenIds: readonly number[];
  /** params.bad_words encoded with encodeBadWords(). */
  badWordsTokenIds?: readonly (readonly number[])[];
  /** This sequence's structured-output state, when the request has structured_outputs. */
  constraint?: SequenceConstraint | null;
}

export interface LogitsProcessorFactory {
  readonly name: string;
  /** The processor for one sequence, or null when the request does not use this kind. */
  create(ctx: LogitsProcessorContext): LogitsProcessor | null;
}

/** Builds one sequence's processors, in registry order. */
export function createLogitsProcessors(ctx: LogitsProcessorContext, registry: readonly LogitsProcessorFactory[]): LogitsProcessor[] {
  const out: LogitsProcessor[] = [];
  for (const factory of registry) {
    const processor = factory.create(ctx);
    if (processor) out.push(processor);
  }
  return out;
}
