// Splits a step's rows into passes of at most `maxRows` rows through the layers, and joins the
// passes' logits back into the step's result. A sequence's tokens may be cut between passes: a
// later piece starts where the earlier one ended (positionOffset), and its K/V reads the rows the
// earlier pass wrote, so the passes in order compute what the whole step would. This is
// llama.cpp's physical micro-batch (n_ubatch) under the engine's logical batch.
import type { StepResult, StepSequence } from '../types';

/** One piece of a step's sequence in a pass: which sequence, and whether it ends there. */
export interface PassPiece {
  seq: number;
  last: boolean;
}

export interface RowPass {
  batch: StepSequence[];
  pieces: PassPiece[];
}

export function splitRows(batch: readonly StepSequence[], maxRows: number): RowPass[] {
  if (!Number.isInteger(maxRows) || maxRows < 1) throw new Error(`maxRows must be a positive integer, got ${maxRows}`);
  const passes: RowPass[] = [];
  let pass: RowPass = { batch: [], pieces: [] };
  let room = maxRows;
  batch.forEach((s, seq) => {
    let from = 0;
    do {
      if (room === 0) {
        passes.push(pass);
        pass = { batch: [], pieces: [] };
        room = maxRows;
      }
      const take = Math.min(room, s.tokens.length - from);
      const to = from + take;
      const piece: StepSequence = { ...s, tokens: s.tokens.slice(from, to), positionOffset: s.positionOffset + from };
      if (s.ropePositions) piece.ropePositions = ropePositionsSlice(s.ropePositions, s.tokens.length, from, to);
      pass.batch.push(piece);
      pass.pieces.push({ seq, last: to === s.tokens.length });
      room -= take;
      from = to;
    } while (from < s.tokens.length);
  });
  if (pass.batch.length > 0) passes.push(pass);
  return passes;
}

/** The step's result from its passes' results (one per pass, in order). */
export function joinPasses(batch: readonly StepSequence[], passes: readonly RowPass[], results: readonly StepResult[], vocab: number): StepResult {
  const logits = new Float32Array(batch.length * vocab);
  const allLogits: (Float32Array | null)[] = batch.map((s) => (s.allLogits ? new Float32Array(s.tokens.length * vocab) : null));
  const filled = new Array<number>(batch.length).fill(0);
  passes.forEach((pass, p) => {
    pass.pieces.forEach(({ seq, last }, i) => {
      const all = allLogits[seq];
      if (all) {
        const rows = results[p].allLogits[i]!;
        all.set(rows, filled[seq]);
        filled[seq] += rows.length;
      }
      if (last) logits.set(results[p].logits.subarray(i * vocab, (i + 1) * vocab), seq * vocab);
    });
  });
  return { logits, allLogits };
}

/** Rows from..to-1 of a sequence's [3 * count] M-RoPE positions (every row's t, then h, then w). */
function ropePositionsSlice(all: Int32Array, count: number, from: number, to: number): Int32Array {
  const out = new Int32Array(3 * (to - from));
  for (let axis = 0; axis < 3; axis++) out.set(all.subarray(axis * count + from, axis * count + to), axis * (to - from));
  return out;
}
