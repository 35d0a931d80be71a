// The paged KV cache the runner owns: per layer one flat K and one flat V array of
// [numBlocks * blockSize, kvHeads * headDim] rows ("slots"). Slot of position p of a sequence =
// blockTable[p / blockSize] * blockSize + p % blockSize. float32 arrays are fed to the graph as
// inputs (zero-copy), and new K/V rows are written here after each step; 16-bit arrays
// (Uint16Array) and 8-bit ones (Uint8Array) are read by the native attention kernel only.
// Layers may be split into pools (kv-pools.ts): each layer's arrays hold its pool's blocks, and
// block ids index the pool of the layer they are used with.
import { ModelArchConfig } from '../types';
import { KV_STORAGE, type KvStorageDtype } from './kv-dtype';
import { singleKvGroup, type KvPool } from './kv-pools';

/** Bytes one KV block takes across all layers (K and V) in the given storage type. */
export function kvBytesPerBlock(config: ModelArchConfig, blockSize: number, dtype: KvStorageDtype = 'float32'): number {
  return 2 * config.numLayers * blockSize * config.numKvHeads * config.headDim * KV_STORAGE[dtype].bytesPerElement;
}

export type KvArray = Float32Array | Uint16Array | Uint8Array;

/**
 * Pool 0's K/V arrays in shared memory, as bytes, for a thread that copies whole blocks out
 * itself: block b of layer l is bytes [b * spanBytes, (b + 1) * spanBytes) of keys[l], then the
 * same of values[l], layer after layer (readBlock's order).
 */
export interface SharedKvLayout {
  keys: Uint8Array[];
  values: Uint8Array[];
  spanBytes: number;
}

export class PagedKvCache {
  readonly keys: KvArray[];
  readonly values: KvArray[];
  readonly rowSize: number;
  /** Slots of pool 0 (every layer's, with one pool). */
  readonly numSlots: number;
  /** The pools, pool 0 first (one for every layer unless given). */
  readonly pools: readonly KvPool[];
  /** Per layer, the index of its pool. */
  readonly poolOfLayer: Int32Array;
  /** sharedLayout's views, made on first use. */
  private layout: SharedKvLayout | null = null;

  /** `numBlocks`: pool 0's; `pools` (absent: one pool of every layer and `numBlocks` blocks) must agree with it. */
  constructor(
    config: ModelArchConfig,
    readonly blockSize: number,
    readonly numBlocks: number,
    readonly dtype: KvStorageDtype = 'float32',
    pools?: readonly KvPool[],
    /** Arrays on SharedArrayBuffers (sharedLayout). */
    readonly shared = false,
  ) {
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new Error(`blockSize must be a positive integer, got ${blockSize}`);
    this.pools = pools ?? singleKvGroup(config).map((group) => ({ ...group, numBlocks }));
    for (const pool of this.pools) {
      if (!Number.isInteger(pool.numBlocks) || pool.numBlocks < 1) throw new Error(`numBlocks must be a positive integer, got ${pool.numBlocks}`);
    }
    if (this.pools[0].numBlocks !== numBlocks) throw new Error(`pool 0 has ${this.pools[0].numBlocks} blocks, not ${numBlocks}`);
    this.poolOfLayer = new Int32Array(config.numLayers).fill(-1);
    this.pools.forEach((pool, p) => pool.layers.forEach((l) => (this.poolOfLayer[l] = p)));
    if (this.poolOfLayer.includes(-1)) throw new Error('every layer needs a KV pool');
    this.rowSize = config.numKvHeads * config.headDim;
    this.numSlots = numBlocks * blockSize;
    const alloc = (l: number) => KV_STORAGE[dtype].allocate(this.pools[this.poolOfLayer[l]].numBlocks * blockSize * this.rowSize, shared);
    this.keys = Array.from({ length: config.numLayers }, (_, l) => alloc(l));
    this.values = Array.from({ length: config.numLayers }, (_, l) => alloc(l));
  }

  /** The float32 arrays, for runners that feed them to a graph (throws for another storage type). */
  float32(): { keys: Float32Array[]; values: Float32Array[] } {
    if (this.dtype !== 'float32') throw new Error(`this runner reads a float32 KV cache; the cache stores ${this.dtype}`);
    return { keys: this.keys as Float32Array[], values: this.values as Float32Array[] };
  }

  /** The block of `pool` holding `position` for a sequence with this block table (checked). */
  block(blockTable: readonly number[], position: number, pool = 0): number {
    const block = blockTable[Math.floor(position / this.blockSize)];
    const numBlocks = this.pools[pool].numBlocks;
    if (!Number.isInteger(block) || block < 0 || block >= numBlocks) {
      throw new Error(`block table [${blockTable.join(', ')}] does not cover position ${position} with valid blocks (numBlocks ${numBlocks})`);
    }
    return block;
  }

  /** Cache row of `position` for a sequence with this block table in `pool`. */
  slot(blockTable: readonly number[], position: number, pool = 0): number {
    return this.block(blockTable, position, pool) * this.blockSize + (position % this.blockSize);
  }

  /** Copies whole blocks within a pool (the third element; 0 when absent). */
  copyBlocks(pairs: ReadonlyArray<readonly [src: number, dst: number, pool?: number]>): void {
    const blockElems = this.blockSize * this.rowSize;
    for (const [src, dst, pool = 0] of pairs) {
      const numBlocks = this.pools[pool]?.numBlocks ?? 0;
      for (const id of [src, dst]) {
        if (!Number.isInteger(id) || id < 0 || id >= numBlocks) throw new Error(`copyBlocks: block ${id} out of range`);
      }
      for (const l of this.pools[pool].layers) {
        for (const arr of [this.keys[l], this.values[l]]) arr.copyWithin(dst * blockElems, src * blockElems, (src + 1) * blockElems);
      }
    }
  }

  /** Bytes of one block of `pool` across its layers: each layer's K rows, then its V rows. */
  blockBytes(pool = 0): number {
    return 2 * this.pools[pool].layers.length * this.blockSize * this.rowSize * KV_STORAGE[this.dtype].bytesPerElement;
  }

  /** A copy of a whole block's K/V (KV transfer between replicas), laid out as blockBytes says. */
  readBlock(block: number, pool = 0): Buffer {
    const out = Buffer.allocUnsafe(this.blockBytes(pool));
    let at = 0;
    this.forEachBlockSpan(block, pool, (arr, start, length) => {
      out.set(new Uint8Array(arr.buffer, arr.byteOffset + start, length), at);
      at += length;
    });
    return out;
  }

  /** Overwrites a whole block with bytes readBlock gave (for the same model shape and storage type). */
  writeBlock(block: number, bytes: Uint8Array, pool = 0): void {
    if (bytes.byteLength !== this.blockBytes(pool)) throw new Error(`writeBlock: ${bytes.byteLength} bytes, a block holds ${this.blockBytes(pool)}`);
    let at = 0;
    this.forEachBlockSpan(block, pool, (arr, start, length) => {
      new Uint8Array(arr.buffer, arr.byteOffset + start, length).set(bytes.subarray(at, at + length));
      at += length;
    });
  }

  /** Pool 0's arrays as bytes when they are shared and pool 0 holds every layer; else null. */
  sharedLayout(): SharedKvLayout | null {
    if (!this.shared || this.pools.length !== 1) return null;
    const bytes = (arr: KvArray) => new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
    this.layout ??= { keys: this.keys.map(bytes), values: this.values.map(bytes), spanBytes: this.blockSize * this.rowSize * KV_STORAGE[this.dtype].bytesPerElement };
    return this.layout;
  }

  /** The byte span of `block` in each of the pool's K and V arrays, in blockBytes order. */
  private forEachBlockSpan(block: number, pool: number, visit: (arr: KvArray, start: number, length: number) => void): void {
    const numBlocks = this.pools[pool]?.numBlocks ?? 0;
    if (!Number.isInteger(block) || block < 0 || block >= numBlocks) throw new Error(`KV block ${block} out of range (pool ${pool} has ${numBlocks})`);
    const bytes = KV_STORAGE[this.dtype].bytesPerElement;
    const length = this.blockSize * this.rowSize * bytes;
    for (const l of this.pools[pool].layers) {
      visit(this.keys[l], block * length, length);
      visit(this.values[l], block * length, length);
    }
  }
}
