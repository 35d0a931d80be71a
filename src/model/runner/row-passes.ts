// Splits a step's rows into passes of at most `maxRows` rows through the layers, and joins the
// passes' logits back into the step's result. A sequence's tokens may be cut between passes: a
// later piece starts where the earlier one ended (positionOffset), and its K/V reads the rows the
// earlier pass wrote, so the passes in order compute what the whole step would. A bidirectional
// run (StepSequence.bidirectionalRuns) is never cut: its rows read each other's K/V. This is
// llama.cpp's physical micro-batch (n_ubatch) under the engine's logical batch.
import type { StepResult, StepSequence } from '../types';
import { cutOutsideRuns } from './bidirectional-runs';
import { sliceStepSequence } from './input-embeds';

/** One piece of a step's sequence in a pass: which sequence, and whether it ends there. */
export interface PassPiece {
  seq: number;
  last: boolean;
}

export interface RowPass {
  batch: StepSequence[];
  pieces: PassPiece[];
}

/** `hiddenSize`: the width of the sequences' given rows (StepSequence.inputEmbeds), which are cut with them. */
export function splitRows(batch: readonly StepSequence[], maxRows: number, hiddenSize = 0): RowPass[] {
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
      // A bidirectional run stays whole: the piece ends before it, or the run opens the next pass.
      const to = cutOutsideRuns(s, from, from + Math.min(room, s.tokens.length - from), maxRows);
      if (to === from) {
        room = 0;
        continue;
      }
      const take = to - from;
      pass.batch.push(sliceStepSequence(s, from, to, hiddenSize));
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

