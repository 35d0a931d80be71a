// KV event batches byte for byte, against MessagePack written out by hand from vLLM's struct
// layout (vllm/distributed/kv_events.py: array_like, omit_defaults, tag): each event an array
// headed by its class name, fields in declaration order, the batch [ts, events, data_parallel_rank].

import { decode } from '@msgpack/msgpack';
import * as crypto from 'node:crypto';
import { encodeKvEventBatch, externalBlockHash, type KvEventBatch } from '../../../../src/engine/kv-events/kv-event-wire';

const str = (s: string) => [0xa0 | s.length, ...Buffer.from(s, 'ascii')];
const u64 = (hex: string) => [0xcf, ...Buffer.from(hex, 'hex')];
const float64 = (v: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(v);
  return [0xcb, ...b];
};

describe('KV event wire format', () => {
  it('encodes a BlockStored of the full-attention group', () => {
    const batch: KvEventBatch = {
      ts: 1.5,
      dataParallelRank: 0,
      events: [
        {
          type: 'BlockStored',
          blockHashes: [1n, 0xfedcba9876543210n],
          parentBlockHash: null,
          tokenIds: [1, 300],
          blockSize: 2,
          loraId: null,
          medium: 'GPU',
          loraName: null,
          groupIdx: 0,
          kvCacheSpecKind: 'full_attention',
          kvCacheSpecSlidingWindow: null,
        },
      ],
    };
    const expected = [
      0x93, ...float64(1.5), 0x91, // [ts, [1 event], rank]
      0x9b, ...str('BlockStored'), // 11 elements: the tag and 10 fields (the trailing default, sliding window, left out)
      0x92, 0x01, ...u64('fedcba9876543210'), // block_hashes: small ints stay small, large ones are uint64
      0xc0, // parent_block_hash
      0x92, 0x01, 0xcd, 0x01, 0x2c, // token_ids [1, 300]
      0x02, // block_size
      0xc0, // lora_id
      ...str('GPU'), // medium
      0xc0, // lora_name
      0x92, 0xc0, 0xc0, // extra_keys: one null per block
      0x00, // group_idx
      ...str('full_attention'), // kv_cache_spec_kind
      0x00, // data_parallel_rank
    ];
    expect([...encodeKvEventBatch(batch)]).toEqual(expected);
  });

  it('encodes an adapter block of a sliding-window group, a removal and a clear', () => {
    const batch: KvEventBatch = {
      ts: 1700000000.25,
      dataParallelRank: 0,
      events: [
        {
          type: 'BlockStored',
          blockHashes: [0x8000000000000000n],
          parentBlockHash: 0x1234n,
          tokenIds: [7],
          blockSize: 1,
          loraId: 3,
          medium: 'GPU',
          loraName: 'sql',
          groupIdx: 1,
          kvCacheSpecKind: 'sliding_window',
          kvCacheSpecSlidingWindow: 4096,
        },
        { type: 'BlockRemoved', blockHashes: [0xffffffffffffffffn, 5n], medium: 'GPU', groupIdx: 1 },
        { type: 'AllBlocksCleared' },
      ],
    };
    const expected = [
      0x93, ...float64(1700000000.25), 0x93,
      0x9c, ...str('BlockStored'),
      0x91, ...u64('8000000000000000'),
      0xcd, 0x12, 0x34, // parent_block_hash 0x1234
      0x91, 0x07,
      0x01,
      0x03, // lora_id
      ...str('GPU'),
      ...str('sql'), // lora_name
      0x91, 0xc0,
      0x01,
      ...str('sliding_window'),
      0xcd, 0x10, 0x00, // kv_cache_spec_sliding_window 4096
      0x94, ...str('BlockRemoved'), 0x92, ...u64('ffffffffffffffff'), 0x05, ...str('GPU'), 0x01,
      0x91, 0xb0, ...Buffer.from('AllBlocksCleared', 'ascii'),
      0x00,
    ];
    expect([...encodeKvEventBatch(batch)]).toEqual(expected);
  });

  it('leaves data_parallel_rank out when it is null (its default)', () => {
    const bytes = encodeKvEventBatch({ ts: 2, dataParallelRank: null, events: [{ type: 'AllBlocksCleared' }] });
    expect([...bytes]).toEqual([0x92, ...float64(2), 0x91, 0x91, 0xb0, ...Buffer.from('AllBlocksCleared', 'ascii')]);
    // A float timestamp stays a float even when whole (msgspec writes float64).
    expect(decode(bytes, { useBigInt64: true })).toEqual([2, [['AllBlocksCleared']]]);
  });

  it('names a block by the last 8 bytes of its SHA-256 digest, big-endian (vLLM\'s int block hash)', () => {
    const digest = crypto.createHash('sha256').update('block').digest();
    expect(externalBlockHash(digest.toString('base64'))).toBe(BigInt(`0x${digest.subarray(24).toString('hex')}`));
  });

  it('writes long token lists, large sizes and longer strings with their wider headers', () => {
    const tokens = Array.from({ length: 70_000 }, (_, i) => i % 70);
    const bytes = encodeKvEventBatch({
      ts: 0.5,
      dataParallelRank: 0,
      events: [{ type: 'BlockStored', blockHashes: [9n], parentBlockHash: null, tokenIds: tokens, blockSize: 70_000, loraId: null, medium: 'GPU', loraName: 'x'.repeat(40), groupIdx: 0, kvCacheSpecKind: 'full_attention', kvCacheSpecSlidingWindow: null }],
    });
    const [, [event]] = decode(bytes, { useBigInt64: true }) as [number, unknown[][]];
    expect((event[3] as number[]).length).toBe(70_000);
    expect(event[4]).toBe(70_000);
    expect(event[7]).toBe('x'.repeat(40));
  });
});
