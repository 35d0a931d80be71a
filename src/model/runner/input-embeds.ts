// StepSequence.inputEmbeds (image rows) and ropePositions (M-RoPE) in the runners: written over
// the embedded rows, cut with their sequence when a step runs as several passes, and refused by
// a runner that cannot honour them rather than silently ignored.
import type { StepSequence } from '../types';
import { runsWithin } from './bidirectional-runs';

/**
 * Writes each sequence's given rows over `hidden` ([rows, hiddenSize], the batch's rows packed
 * in order). Called after the embedding scale: transformers scales token embeddings only (Gemma's
 * sqrt(hidden)); the image rows enter as the projector gives them.
 */
export function writeInputEmbeds(hidden: Float32Array, batch: readonly StepSequence[], hiddenSize: number): void {
  let base = 0;
  for (const s of batch) {
    for (const { row, data } of s.inputEmbeds ?? []) {
      const rows = data.length / hiddenSize;
      if (!Number.isInteger(rows) || row < 0 || row + rows > s.tokens.length) {
        throw new Error(`input embeddings of ${data.length} values at row ${row} do not fit a sequence of ${s.tokens.length} rows of ${hiddenSize}`);
      }
      hidden.set(data, (base + row) * hiddenSize);
    }
    base += s.tokens.length;
  }
}

/** The part of `s` from token `from` to `to` (a pass's piece): its tokens, and its given rows and rotary positions moved with them. */
export function sliceStepSequence(s: StepSequence, from: number, to: number, hiddenSize: number): StepSequence {
  const piece: StepSequence = { ...s, tokens: s.tokens.slice(from, to), positionOffset: s.positionOffset + from };
  if (s.inputEmbeds) {
    const embeds: { row: number; data: Float32Array }[] = [];
    for (const { row, data } of s.inputEmbeds) {
      const end = row + data.length / hiddenSize;
      const a = Math.max(row, from);
      const b = Math.min(end, to);
      if (a < b) embeds.push({ row: a - from, data: data.subarray((a - row) * hiddenSize, (b - row) * hiddenSize) });
    }
    if (embeds.length > 0) piece.inputEmbeds = embeds;
    else delete piece.inputEmbeds;
  }
  if (s.bidirectionalRuns) {
    const runs = runsWithin(s.bidirectionalRuns, from, to);
    if (runs.length > 0) piece.bidirectionalRuns = runs;
    else delete piece.bidirectionalRuns;
  }
  if (s.ropePositions) {
    const n = s.tokens.length;
    const positions = new Int32Array(3 * (to - from));
    for (let axis = 0; axis < 3; axis++) positions.set(s.ropePositions.subarray(axis * n + from, axis * n + to), axis * (to - from));
    piece.ropePositions = positions;
  }
  return piece;
}

/** Throws when a step asks `runner` for what it does not do (`takes`: whether it writes inputEmbeds, applies ropePositions). */
export function refuseUnsupportedRows(batch: readonly StepSequence[], runner: string, takes: { embeds: boolean; ropePositions: boolean; bidirectionalRuns: boolean }): void {
  for (const s of batch) {
    if (s.bidirectionalRuns && !takes.bidirectionalRuns) throw new Error(`the ${runner} runner attends causally only; bidirectional image rows (StepSequence.bidirectionalRuns) need the segmented runner`);
    if (s.inputEmbeds && !takes.embeds) throw new Error(`the ${runner} runner does not take input embeddings (image rows); vision models run on the segmented runner (needs the native addon)`);
    if (s.ropePositions && !takes.ropePositions) throw new Error(`M-RoPE positions (StepSequence.ropePositions) need the segmented runner and a model with mrope_section; ${runner} computes 1-D positions here`);
  }
}
