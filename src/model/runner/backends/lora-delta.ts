// The adapters' low-rank products of one pass for the native backends, Punica/SGMV style: the
// base linear has run once over every row; then, per slot with rows in the pass, that slot's rows
// of x go through its adapter's A and scaled B and the product is added into y, every slot of a
// linear in one call of ortllm_native's loraAddSlots (both products on the thread pool, added
// straight into y: two hand-offs to the pool per linear however many adapters the pass holds).
// B is packed for it once per adapter, not per step. Plain loops where the addon (or
// loraAddSlots) is not built.
import type { LoraModule, LoraPair, LoraWeights } from '../../lora/lora-weights';
import type { NativeKernels } from '../native-kernels';
import type { PassLora } from './decoder-backend';

/** One slot's rows in a pass. */
interface SlotRows {
  weights: LoraWeights;
  /** The rows, ascending. */
  rows: Int32Array;
}

/** Where a linear's output lies: row r, column j at y[r * stride + offset + j] (the gate | up halves of a fused output). */
export interface OutputLayout {
  stride: number;
  offset: number;
}

/** Output columns per chunk of loraAdd's packed B (native/src/lora-add.h's kLoraCols). */
const LORA_COLS = 64;

/** Each adapter pair's scaled B packed for loraAdd, made on first use and dropped with the adapter. */
const packedB = new WeakMap<LoraPair, Float32Array>();

type LoraKernel = Required<Pick<NativeKernels, 'loraAddSlots'>>;

export class LoraDeltas {
  private readonly groups: SlotRows[];
  private readonly native: LoraKernel | null;
  /** Every slot's rows, slot after slot (loraAddSlots' rows). */
  private readonly allRows: Int32Array;
  /** loraAddSlots' dims, rewritten by each call: [in, out, yStride, yOffset, then rank and row count per slot]. */
  private readonly dims: Int32Array;

  /** `lora`: the pass's slots and rows; `native`: ortllm_native (null, or a build without loraAddSlots: plain loops). */
  constructor(lora: PassLora, native: NativeKernels | null) {
    this.groups = slotGroups(lora);
    this.native = native?.loraAddSlots ? (native as LoraKernel) : null;
    this.allRows = new Int32Array(this.groups.reduce((n, g) => n + g.rows.length, 0));
    this.dims = new Int32Array(4 + 2 * this.groups.length);
    let at = 0;
    for (const g of this.groups) {
      this.allRows.set(g.rows, at);
      at += g.rows.length;
    }
  }

  /**
   * y += (x_s Aᵀ) bᵀ over each slot's rows s, for `module` of `layer`: x [rows, in] row-major, y
   * [rows, ·] laid out as `out` says (default: [rows, outFeatures]).
   */
  add(layer: number, module: LoraModule, x: Float32Array, y: Float32Array, out?: OutputLayout): void {
    const pairs = this.groups.map((group) => group.weights.layers[layer]?.get(module));
    const present = pairs.filter((pair): pair is LoraPair => pair !== undefined);
    if (present.length === 0) return;
    const stride = out ? out.stride : present[0].outFeatures;
    const offset = out ? out.offset : 0;
    if (!this.native) {
      pairs.forEach((pair, g) => pair && addProduct(pair, x, y, this.groups[g].rows, stride, offset));
      return;
    }
    // Slots whose adapter leaves this module out take no part: their rows drop out of the call.
    const rows = present.length === pairs.length ? this.allRows : Int32Array.from(pairs.flatMap((pair, g) => (pair ? Array.from(this.groups[g].rows) : [])));
    const dims = this.dims.subarray(0, 4 + 2 * present.length);
    dims[0] = present[0].inFeatures;
    dims[1] = present[0].outFeatures;
    dims[2] = stride;
    dims[3] = offset;
    let at = 4;
    pairs.forEach((pair, g) => {
      if (!pair) return;
      dims[at++] = pair.rank;
      dims[at++] = this.groups[g].rows.length;
    });
    this.native.loraAddSlots(present.map((pair) => pair.a), present.map(loraPackedB), x, y, rows, dims);
  }
}

/**
 * The pair's scaled B [out, rank] as loraAdd reads it: output columns in chunks of 64, each chunk
 * [rank, 64] contiguous, the last zero-padded (a chunk's rows on consecutive cache lines).
 */
export function loraPackedB(pair: LoraPair): Float32Array {
  let bp = packedB.get(pair);
  if (!bp) {
    const { rank, outFeatures: n, b } = pair;
    bp = new Float32Array(Math.ceil(n / LORA_COLS) * LORA_COLS * rank);
    for (let j = 0; j < n; j++) {
      const base = Math.floor(j / LORA_COLS) * rank * LORA_COLS + (j % LORA_COLS);
      for (let r = 0; r < rank; r++) bp[base + r * LORA_COLS] = b[j * rank + r];
    }
    packedB.set(pair, bp);
  }
  return bp;
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
  return [...rowsOf].map(([slot, rows]) => ({ weights: lora.slots[slot]!, rows: Int32Array.from(rows) }));
}

/** The same product in plain loops (where ortllm_native or its loraAdd is not built). */
function addProduct(pair: LoraPair, x: Float32Array, y: Float32Array, rows: Int32Array, stride: number, offset: number): void {
  const { rank, inFeatures: k, outFeatures: n, a, b } = pair;
  const t = new Float64Array(rank);
  for (const row of rows) {
    for (let r = 0; r < rank; r++) {
      let sum = 0;
      for (let i = 0; i < k; i++) sum += x[row * k + i] * a[r * k + i];
      t[r] = sum;
    }
    for (let j = 0; j < n; j++) {
      let sum = 0;
      for (let r = 0; r < rank; r++) sum += t[r] * b[j * rank + r];
      y[row * stride + offset + j] += sum;
    }
  }
}
