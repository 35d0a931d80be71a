// The adapters' low-rank products of one pass for the native backends, Punica/SGMV style: the
// base linear has run once over every row; then, per slot with rows in the pass, that slot's rows
// of x go through its adapter's A and scaled B and the product is added into y. Each slot's rows
// are gathered once per pass (a view when they are contiguous, as the runner packs them by
// sequence), and each pair is packed for the f32 addon's GEMM once per adapter, not per step.
import type { LoraModule, LoraPair, LoraWeights } from '../../lora/lora-weights';
import type { PassLora } from './decoder-backend';
import type { F32Addon } from './native-f32';

/** One slot's rows in a pass. */
interface SlotRows {
  weights: LoraWeights;
  /** The rows, ascending. */
  rows: Int32Array;
  /** First row when the rows are contiguous (x and y are then read and written in place), else -1. */
  first: number;
}

/** A pair as the GEMM reads it: A [rank, in] and scaled B [out, rank], packed (or as they are, without the addon). */
interface PackedPair {
  a: Float32Array;
  b: Float32Array;
}

/** Where a linear's output lies: row r, column j at y[r * stride + offset + j] (native-q8's gate | up halves). */
export interface OutputLayout {
  stride: number;
  offset: number;
}

/** The f32 addon's packed copies of every adapter's pairs, made on first use and dropped with the adapter. */
const packedPairs = new WeakMap<LoraPair, PackedPair>();

export class LoraDeltas {
  private readonly groups: SlotRows[];

  /** `lora`: the pass's slots and rows; `addon`: the f32 GEMM (null: plain loops). */
  constructor(
    lora: PassLora,
    private readonly addon: F32Addon | null,
  ) {
    this.groups = slotGroups(lora);
  }

  /**
   * y += (x_s Aᵀ) bᵀ over each slot's rows s, for `module` of `layer`: x [rows, in] row-major, y
   * [rows, ·] laid out as `out` says (default: [rows, outFeatures]).
   */
  add(layer: number, module: LoraModule, x: Float32Array, y: Float32Array, out?: OutputLayout): void {
    for (const group of this.groups) {
      const pair = group.weights.layers[layer]?.get(module);
      if (pair) this.addPair(group, pair, x, y, out ?? { stride: pair.outFeatures, offset: 0 });
    }
  }

  private addPair(group: SlotRows, pair: LoraPair, x: Float32Array, y: Float32Array, out: OutputLayout): void {
    const { rank, inFeatures: k, outFeatures: n } = pair;
    const m = group.rows.length;
    const xs = group.first >= 0 ? x.subarray(group.first * k, (group.first + m) * k) : gather(x, group.rows, k);
    const t = new Float32Array(m * rank);
    const delta = new Float32Array(m * n);
    const packed = this.packed(pair);
    if (this.addon) {
      this.addon.f32Gemm(packed.a, xs, t, m, rank, k);
      this.addon.f32Gemm(packed.b, t, delta, m, n, rank);
    } else {
      multiplyTransposed(xs, packed.a, t, m, rank, k);
      multiplyTransposed(t, packed.b, delta, m, n, rank);
    }
    for (let i = 0; i < m; i++) {
      const at = group.rows[i] * out.stride + out.offset;
      for (let j = 0; j < n; j++) y[at + j] += delta[i * n + j];
    }
  }

  private packed(pair: LoraPair): PackedPair {
    if (!this.addon) return pair;
    let p = packedPairs.get(pair);
    if (!p) {
      p = { a: this.addon.f32Pack(pair.a, pair.rank, pair.inFeatures), b: this.addon.f32Pack(pair.b, pair.outFeatures, pair.rank) };
      packedPairs.set(pair, p);
    }
    return p;
  }
}

/** The slots with rows in the pass, each with its rows. */
function slotGroups(lora: PassLora): SlotRows[] {
  const rowsOf = new Map<number, number[]>();
  lora.rowSlot.forEach((slot, row) => {
    if (slot < 0) return;
    if (!lora.slots[slot]) throw new Error(`row ${row} names LoRA slot ${slot}, which holds no adapter`);
    const rows = rowsOf.get(slot) ?? [];
    rows.push(row);
    rowsOf.set(slot, rows);
  });
  return [...rowsOf].map(([slot, rows]) => ({
    weights: lora.slots[slot]!,
    rows: Int32Array.from(rows),
    first: rows[rows.length - 1] - rows[0] === rows.length - 1 ? rows[0] : -1,
  }));
}

/** Rows `rows` of x [*, width] as one array. */
function gather(x: Float32Array, rows: Int32Array, width: number): Float32Array {
  const out = new Float32Array(rows.length * width);
  rows.forEach((r, i) => out.set(x.subarray(r * width, (r + 1) * width), i * width));
  return out;
}

/** y [m, n] = x [m, k] Wᵀ with W [n, k] row-major (where the f32 addon is not built). */
function multiplyTransposed(x: Float32Array, w: Float32Array, y: Float32Array, m: number, n: number, k: number): void {
  for (let r = 0; r < m; r++) {
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let i = 0; i < k; i++) sum += x[r * k + i] * w[j * k + i];
      y[r * n + j] = sum;
    }
  }
}
