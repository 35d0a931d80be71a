// Turns a group of sequences into the decoder graph's padded input arrays and tells where each
// sequence's results lie in the outputs.
import { StepSequence } from '../types';
import { PagedKvCache } from './kv-cache';

export interface StepInputs {
  batch: number;
  seq: number;
  /** Past blocks per sequence (padded); the graph sees past * blockSize past positions. */
  pastBlocks: number;
  inputIds: BigInt64Array;
  positionIds: BigInt64Array;
  pastBlockIds: BigInt64Array;
  /** Boolean (1 = may attend), a quarter of a float mask's size: long prefill chunks make it big. */
  attnMask: Uint8Array;
  logitsRows: BigInt64Array;
  /** Per sequence: index of its first row in the logits output and how many rows it has. */
  logitsAt: { first: number; count: number }[];
  /** Per sequence: the cache slot of each new token (checked here, before the run). */
  newSlots: number[][];
}

export function buildStepInputs(group: readonly StepSequence[], cache: PagedKvCache, maxPositions: number): StepInputs {
  const batch = group.length;
  const seq = Math.max(...group.map((s) => s.tokens.length));
  const pastBlocks = Math.max(...group.map((s) => Math.ceil(s.positionOffset / cache.blockSize)));
  const past = pastBlocks * cache.blockSize;
  const total = past + seq;
  const inputIds = new BigInt64Array(batch * seq);
  const positionIds = new BigInt64Array(batch * seq);
  const pastBlockIds = new BigInt64Array(batch * pastBlocks);
  const attnMask = new Uint8Array(batch * seq * total);
  const rows: number[] = [];
  const logitsAt: StepInputs['logitsAt'] = [];
  const newSlots: number[][] = [];

  group.forEach((s, b) => {
    const n = s.tokens.length;
    const offset = s.positionOffset;
    if (n < 1) throw new Error('a step sequence needs at least one token');
    if (offset + n > maxPositions) {
      throw new Error(`position ${offset + n - 1} is beyond the model's ${maxPositions} positions`);
    }
    const used = Math.ceil(offset / cache.blockSize);
    for (let j = 0; j < used; j++) pastBlockIds[b * pastBlocks + j] = BigInt(cache.block(s.blockTable, j * cache.blockSize));
    newSlots.push(Array.from({ length: n }, (_, i) => cache.slot(s.blockTable, offset + i)));
    for (let i = 0; i < seq; i++) {
      const row = b * seq + i;
      const real = i < n;
      inputIds[row] = BigInt(real ? s.tokens[i] : 0);
      positionIds[row] = BigInt(real ? offset + i : offset);
      const maskRow = row * total;
      if (real) {
        attnMask.fill(1, maskRow, maskRow + offset);
        attnMask.fill(1, maskRow + past, maskRow + past + i + 1);
      } else {
        attnMask[maskRow + past + i] = 1; // padding attends to itself only; its outputs are ignored
      }
    }
    const first = rows.length;
    const from = s.allLogits ? 0 : n - 1;
    for (let i = from; i < n; i++) rows.push(b * seq + i);
    logitsAt.push({ first, count: n - from });
  });

  return {
    batch,
    seq,
    pastBlocks,
    inputIds,
    positionIds,
    pastBlockIds,
    attnMask,
    logitsRows: BigInt64Array.from(rows.map((r) => BigInt(r))),
    logitsAt,
    newSlots,
  };
}

/**
 * Writes the step's new K/V ([2 * layers * batch, seq, rowSize], layer-major, K then V) into the
 * cache; `slots` = StepInputs.newSlots.
 */
export function scatterNewKv(cache: PagedKvCache, newKv: Float32Array, slots: readonly number[][], seq: number): void {
  const batch = slots.length;
  const rowSize = cache.rowSize;
  const { keys, values } = cache.float32();
  for (let l = 0; l < keys.length; l++) {
    for (let kind = 0; kind < 2; kind++) {
      const dst = kind === 0 ? keys[l] : values[l];
      const base = (2 * l + kind) * batch;
      slots.forEach((seqSlots, b) => {
        seqSlots.forEach((slot, i) => {
          const src = ((base + b) * seq + i) * rowSize;
          dst.set(newKv.subarray(src, src + rowSize), slot * rowSize);
        });
      });
    }
  }
}
