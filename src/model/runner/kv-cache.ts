// The paged KV cache the runner owns: per layer one flat K and one flat V array of
// [numBlocks * blockSize, kvHeads * headDim] rows ("slots"). Slot of position p of a sequence =
// blockTable[p / blockSize] * blockSize + p % blockSize. float32 arrays are fed to the graph as
// inputs (zero-copy), and new K/V rows are written here after each step; 16-bit arrays
// (Uint16Array) and 8-bit ones (Uint8Array) are read by the native attention kernel only.
import { ModelArchConfig } from '../types';
import { KV_STORAGE, type KvStorageDtype } from './kv-dtype';

/** Bytes one KV block takes across all layers (K and V) in the given storage type. */
export function kvBytesPerBlock(config: ModelArchConfig, blockSize: number, dtype: KvStorageDtype = 'float32'): number {
  return 2 * config.numLayers * blockSize * config.numKvHeads * config.headDim * KV_STORAGE[dtype].bytesPerElement;
}

export type KvArray = Float32Array | Uint16Array | Uint8Array;

export class PagedKvCache {
  readonly keys: KvArray[];
  readonly values: KvArray[];
  readonly rowSize: number;
  readonly numSlots: number;

  constructor(
    config: ModelArchConfig,
    readonly blockSize: number,
    readonly numBlocks: number,
    readonly dtype: KvStorageDtype = 'float32',
  ) {
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new Error(`blockSize must be a positive integer, got ${blockSize}`);
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new Error(`numBlocks must be a positive integer, got ${numBlocks}`);
    this.rowSize = config.numKvHeads * config.headDim;
    this.numSlots = numBlocks * blockSize;
    const alloc = () => KV_STORAGE[dtype].allocate(this.numSlots * this.rowSize);
    this.keys = Array.from({ length: config.numLayers }, alloc);
    this.values = Array.from({ length: config.numLayers }, alloc);
  }

  /** The float32 arrays, for runners that feed them to a graph (throws for another storage type). */
  float32(): { keys: Float32Array[]; values: Float32Array[] } {
    if (this.dtype !== 'float32') throw new Error(`this runner reads a float32 KV cache; the cache stores ${this.dtype}`);
    return { keys: this.keys as Float32Array[], values: this.values as Float32Array[] };
  }

  /** The block holding `position` for a sequence with this block table (checked). */
  block(blockTable: readonly number[], position: number): number {
    const block = blockTable[Math.floor(position / this.blockSize)];
    if (!Number.isInteger(block) || block < 0 || block >= this.numBlocks) {
      throw new Error(`block table [${blockTable.join(', ')}] does not cover position ${position} with valid blocks (numBlocks ${this.numBlocks})`);
    }
    return block;
  }

  /** Cache row of `position` for a sequence with this block table. */
  slot(blockTable: readonly number[], position: number): number {
    return this.block(blockTable, position) * this.blockSize + (position % this.blockSize);
  }

  copyBlocks(pairs: ReadonlyArray<readonly [number, number]>): void {
    const blockElems = this.blockSize * this.rowSize;
    for (const [src, dst] of pairs) {
      for (const id of [src, dst]) {
        if (!Number.isInteger(id) || id < 0 || id >= this.numBlocks) throw new Error(`copyBlocks: block ${id} out of range`);
      }
      for (const arr of [...this.keys, ...this.values]) {
        arr.copyWithin(dst * blockElems, src * blockElems, (src + 1) * blockElems);
      }
    }
  }
}
