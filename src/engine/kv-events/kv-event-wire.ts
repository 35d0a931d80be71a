// vLLM's KV cache events (vllm/distributed/kv_events.py) as they travel: msgspec structs with
// array_like, omit_defaults and tag, so each event is a MessagePack array whose first element is
// its class name, followed by its fields in declaration order, and the batch is
// [ts, events, data_parallel_rank]. Block hashes go out as vLLM sends them by default
// (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1): the digest's last 8 bytes as an unsigned big-endian int.

import { MsgpackWriter } from './msgpack-writer';

/** vLLM's MEDIUM_GPU: the engine's own KV cache (the tier a prefix hit reads without a transfer). */
export const MEDIUM_ENGINE_CACHE = 'GPU';

/** vLLM's KVCacheSpecKind values this engine's pools have. */
export type KvCacheSpecKind = 'full_attention' | 'sliding_window';

export interface BlockStored {
  type: 'BlockStored';
  blockHashes: bigint[];
  parentBlockHash: bigint | null;
  tokenIds: number[];
  blockSize: number;
  loraId: number | null;
  medium: string | null;
  loraName: string | null;
  /** The KV cache group (pool) the blocks are in, and what attends over it. */
  groupIdx: number;
  kvCacheSpecKind: KvCacheSpecKind;
  /** Sliding-window pools only. */
  kvCacheSpecSlidingWindow: number | null;
}

export interface BlockRemoved {
  type: 'BlockRemoved';
  blockHashes: bigint[];
  medium: string | null;
  groupIdx: number;
}

export interface AllBlocksCleared {
  type: 'AllBlocksCleared';
}

export type KvCacheEvent = BlockStored | BlockRemoved | AllBlocksCleared;

export interface KvEventBatch {
  /** Seconds since the epoch. */
  ts: number;
  events: KvCacheEvent[];
  /** vLLM's publisher fills in its rank (0 without data parallelism). */
  dataParallelRank: number | null;
}

/** A block hash (base64 SHA-256 digest, block-hash.ts) as vLLM's ExternalBlockHash int: the last 8 bytes, big-endian. */
export function externalBlockHash(hash: string): bigint {
  // Base64 characters 32.. hold exactly the digest's bytes 24..31.
  return Buffer.from(hash.slice(32), 'base64').readBigUInt64BE(0);
}

/** The batch's MessagePack bytes. */
export function encodeKvEventBatch(batch: KvEventBatch, w = new MsgpackWriter()): Buffer {
  // data_parallel_rank is the only field with a default: omitted when null.
  w.array(batch.dataParallelRank === null ? 2 : 3).float64(batch.ts).array(batch.events.length);
  for (const event of batch.events) writeEvent(w, event);
  if (batch.dataParallelRank !== null) w.int(batch.dataParallelRank);
  return w.take();
}

function writeEvent(w: MsgpackWriter, e: KvCacheEvent): void {
  switch (e.type) {
    case 'BlockStored': {
      // extra_keys (one entry per block, null: nothing beyond the tokens) is written because the
      // group fields after it are; kv_cache_spec_sliding_window, the last, is omitted when null.
      const window = e.kvCacheSpecSlidingWindow;
      w.array(window === null ? 11 : 12).str(e.type);
      hashes(w, e.blockHashes);
      if (e.parentBlockHash === null) w.nil();
      else w.uint(e.parentBlockHash);
      w.array(e.tokenIds.length);
      for (const t of e.tokenIds) w.int(t);
      w.int(e.blockSize).intOrNil(e.loraId).strOrNil(e.medium).strOrNil(e.loraName);
      w.array(e.blockHashes.length);
      for (let i = 0; i < e.blockHashes.length; i++) w.nil();
      w.int(e.groupIdx).str(e.kvCacheSpecKind);
      if (window !== null) w.int(window);
      return;
    }
    case 'BlockRemoved':
      w.array(4).str(e.type);
      hashes(w, e.blockHashes);
      w.strOrNil(e.medium).int(e.groupIdx);
      return;
    case 'AllBlocksCleared':
      w.array(1).str(e.type);
      return;
  }
}

function hashes(w: MsgpackWriter, list: readonly bigint[]): void {
  w.array(list.length);
  for (const h of list) w.uint(h);
}
