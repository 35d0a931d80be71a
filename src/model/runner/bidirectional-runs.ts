// StepSequence.bidirectionalRuns in the segmented runner: the paged-attention kernel's entries
// for a sequence whose rows include runs that attend both ways (a Gemma 3 image), and the cuts
// of a step into passes, which must never fall inside such a run.
//
// The kernel takes per entry [first row, rows, past, table offset], and row i of an entry sees
// positions up to past + i. A run's row gets an entry of its own whose `past` is the run's last
// position: it sees every earlier position and the whole run, whose K/V this step wrote into the
// cache before attention (as attendRowByRow relies on). Text rows around runs stay causal.
import type { StepSequence } from '../types';

type Run = { row: number; count: number };

/** Throws unless the runs are in order, apart and inside the sequence's rows. */
export function checkRuns(s: StepSequence): void {
  let end = 0;
  for (const { row, count } of s.bidirectionalRuns ?? []) {
    if (!Number.isInteger(row) || !Number.isInteger(count) || count < 1 || row < end || row + count > s.tokens.length) {
      throw new Error(`bidirectional runs must be in order, apart and within the sequence's ${s.tokens.length} rows`);
    }
    end = row + count;
  }
}

/** Attention entries the sequence takes (one per row of each run, one per stretch of text between). */
export function entryCount(s: StepSequence): number {
  if (s.attendRowByRow) return s.tokens.length;
  const runs = s.bidirectionalRuns ?? [];
  if (runs.length === 0) return 1;
  let n = 0;
  let at = 0;
  for (const { row, count } of runs) {
    if (row > at) n++;
    n += count;
    at = row + count;
  }
  return at < s.tokens.length ? n + 1 : n;
}

/**
 * Writes the sequence's entries (rows from `firstRow` in the pass, `past` its positionOffset) at
 * `item`; returns the next item. Each run row's [entry, position, run's first and last position]
 * goes to `runRows` (windowedRunCalls reads them).
 */
export function writeEntries(seqInfo: Int32Array, item: number, s: StepSequence, firstRow: number, tableOffset: number, runRows: number[]): number {
  const past = s.positionOffset;
  const count = s.tokens.length;
  // Row by row: one entry per token, each seeing the positions up to its own.
  if (s.attendRowByRow) {
    for (let t = 0; t < count; t++) seqInfo.set([firstRow + t, 1, past + t, tableOffset], 4 * item++);
    return item;
  }
  let at = 0;
  const text = (to: number): void => {
    if (to > at) seqInfo.set([firstRow + at, to - at, past + at, tableOffset], 4 * item++);
  };
  for (const { row, count: n } of s.bidirectionalRuns ?? []) {
    text(row);
    const last = past + row + n - 1;
    for (let t = row; t < row + n; t++) {
      runRows.push(item, past + t, past + row, last);
      seqInfo.set([firstRow + t, 1, last, tableOffset], 4 * item++);
    }
    at = row + n;
  }
  text(count);
  return item;
}

/**
 * Where a pass may end a piece of `s` that starts at row `from` and would end at `to`: before a
 * run that `to` would cut (or `to` itself). Returns `from` when the run starting at `from` does not
 * fit; throws when a run is longer than a whole pass.
 */
export function cutOutsideRuns(s: StepSequence, from: number, to: number, maxRows: number): number {
  const run = (s.bidirectionalRuns ?? []).find((r) => r.row < to && r.row + r.count > to);
  if (!run) return to;
  if (run.count > maxRows) throw new Error(`a bidirectional run of ${run.count} rows does not fit a pass of ${maxRows} rows`);
  return Math.max(from, run.row);
}

/** The runs of rows [from, to) of `s`, renumbered from `from` (a pass's piece holds whole runs only). */
export function runsWithin(runs: readonly Run[], from: number, to: number): Run[] {
  return runs.filter((r) => r.row >= from && r.row + r.count <= to).map((r) => ({ row: r.row - from, count: r.count }));
}

/** One more attention call of a windowed layer: these entries again, with a wider window. */
export interface WidenedCall {
  seqInfo: Int32Array;
  window: number;
}

const widenedByPass = new WeakMap<Int32Array, Map<number, WidenedCall[]>>();

/**
 * A sliding-window layer's run rows: transformers' mask is (causal and within the window) or (same
 * image), so row q sees from min(q - window + 1, run start) to the run's end. The kernel starts a
 * row's window at its `past` (the run's end) minus window - 1; each group of rows that needs an
 * earlier start is attended again with the window that gives it, overwriting those rows' output.
 * (llama.cpp's non-causal image decode agrees wherever a run fits in the window.)
 */
export function widenedCalls(seqInfo: Int32Array, runRows: Int32Array, window: number): WidenedCall[] {
  let byWindow = widenedByPass.get(runRows);
  if (!byWindow) widenedByPass.set(runRows, (byWindow = new Map<number, WidenedCall[]>()));
  const known = byWindow.get(window);
  if (known) return known;
  const groups = new Map<number, number[]>();
  for (let i = 0; i < runRows.length; i += 4) {
    const [entry, q, first, last] = runRows.subarray(i, i + 4);
    const start = Math.max(0, Math.min(q - window + 1, first));
    if (start === Math.max(0, last - window + 1)) continue;
    const wider = last - start + 1;
    let entries = groups.get(wider);
    if (!entries) groups.set(wider, (entries = []));
    entries.push(entry);
  }
  const calls = [...groups].map(([wider, entries]) => {
    const info = new Int32Array(4 * entries.length);
    entries.forEach((e, j) => info.set(seqInfo.subarray(4 * e, 4 * e + 4), 4 * j));
    return { seqInfo: info, window: wider };
  });
  byWindow.set(window, calls);
  return calls;
}
