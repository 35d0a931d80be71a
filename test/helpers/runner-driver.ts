// Drives a ModelRunner like a tiny engine: hands out KV blocks per sequence and feeds tokens
// in prefill chunks or one at a time, collecting the logits of every fed position.
import { resolve } from 'node:path';
import { createRunner } from '../../src/model/runner';
import type { LoadedModel, ModelRunner, RunnerOptions } from '../../src/model/types';
import { needs, type Gate } from './needs';

export class BlockAllocator {
  private next = 0;
  constructor(private readonly runner: ModelRunner) {}
  /** Block ids for `tokens` positions, shuffled-looking (not contiguous) to exercise paging. */
  table(tokens: number): number[] {
    const n = Math.ceil(tokens / this.runner.blockSize);
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      const id = (this.next * 7 + 3) % this.runner.numBlocks;
      this.next++;
      ids.push(id);
    }
    if (this.next > this.runner.numBlocks) throw new Error('test allocator ran out of blocks');
    return ids;
  }
}

/** Runs `tokens` in chunks of `chunk` with allLogits; returns per-position logits. */
export async function runChunked(runner: ModelRunner, tokens: readonly number[], chunk: number, blockTable: number[]): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  const vocab = runner.config.vocabSize;
  for (let at = 0; at < tokens.length; at += chunk) {
    const piece = tokens.slice(at, at + chunk);
    const r = await runner.step([{ tokens: piece, positionOffset: at, blockTable, allLogits: true }]);
    const all = r.allLogits[0]!;
    for (let i = 0; i < piece.length; i++) out.push(all.slice(i * vocab, (i + 1) * vocab));
  }
  return out;
}

/** fn over a runner of `model` made with `opts`, disposed after (even when fn throws). */
export async function withRunner<T>(model: LoadedModel, opts: RunnerOptions, fn: (r: ModelRunner) => Promise<T>): Promise<T> {
  const runner = await createRunner(model, opts);
  try {
    return await fn(runner);
  } finally {
    await runner.dispose();
  }
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Largest |got - want| over every row, relative to the largest |want| (rows of logits against a reference). */
export function rowsRelativeDiff(got: ArrayLike<number>[], want: ArrayLike<number>[]): number {
  const scale = Math.max(...want.map((row) => Math.max(...Array.from(row, Math.abs))));
  return Math.max(...got.map((row, i) => maxAbsDiff(row, want[i]))) / scale;
}

export function argmax(a: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

/** The built graph's attention paths a runner test covers; 'native' needs the addon (npm install builds it). */
export const NATIVE_ADDON = resolve(__dirname, '../../native/build/Release/ortllm_native.node');
export const ATTENTION_PATHS: Array<{ name: string; attention: 'native' | 'graph'; gate: Gate }> = [
  { name: 'native paged attention', attention: 'native', gate: needs(NATIVE_ADDON) },
  { name: 'in-graph attention', attention: 'graph', gate: needs() },
];
