// TcpConnector over real sockets on 127.0.0.1, with in-memory block stores: a pull returns the
// producer's bytes once; every check (transfer, engine, hashes, shape, length, checksum,
// connection loss, expiry) fails the pull or the offer as it should. A producer whose KV cache is
// in shared memory is served by its socket thread alone (the engine thread never copies a block).

import * as net from 'node:net';
import { TcpConnector } from '../../../../src/engine/kv-transfer/tcp-connector';
import { waitFor } from '../../../helpers/wait';
import type { KvConnectorContext, PullJob } from '../../../../src/engine/kv-transfer/kv-connector';
import { normalizeKvTransferConfig } from '../../../../src/engine/kv-transfer/kv-transfer-config';
import { encodeFrame, encodeJson, FRAME_BYTES, FrameReader, FRAME_JSON, MAX_FRAME_BYTES, sha256, type KvShape } from '../../../../src/engine/kv-transfer/wire';
import { PagedKvCache } from '../../../../src/model/runner/kv-cache';
import type { KvBlockStore, ModelArchConfig } from '../../../../src/model/types';

const SHAPE: KvShape = { num_layers: 2, num_kv_heads: 1, head_dim: 4, block_size: 4, kv_dtype: 'float32', pools: [{ layers: 2, window: 0 }] };
/** K and V of 2 layers x 4 tokens x 4 float32 values. */
const BLOCK_BYTES = 2 * 2 * 4 * 4 * 4;

/** The runner's own cache, in shared memory, with SHAPE's layout. */
function sharedCache(): PagedKvCache {
  const config = { numLayers: SHAPE.num_layers, numKvHeads: SHAPE.num_kv_heads, headDim: SHAPE.head_dim } as ModelArchConfig;
  return new PagedKvCache(config, SHAPE.block_size, 16, 'float32', undefined, true);
}

class MemoryBlocks implements KvBlockStore {
  readonly dtype = 'float32';
  readonly data = new Map<number, Buffer>();
  blockBytes(): number {
    return BLOCK_BYTES;
  }
  readBlock(block: number): Buffer {
    return Buffer.from(this.data.get(block) ?? Buffer.alloc(BLOCK_BYTES));
  }
  writeBlock(block: number, bytes: Uint8Array): void {
    this.data.set(block, Buffer.from(bytes));
  }
}

function connector(extra: { shape?: KvShape; timeout?: number; engineId?: string; shared?: boolean } = {}) {
  const blocks: KvBlockStore = extra.shared ? sharedCache() : new MemoryBlocks();
  const released: string[] = [];
  const config = normalizeKvTransferConfig(
    { kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_port: 0, engine_id: extra.engineId ?? 'producer', kv_connector_extra_config: { abort_request_timeout: extra.timeout ?? 60, transfer_timeout: 2 } },
    ['TcpConnector'],
    {},
  );
  const context: KvConnectorContext = { config, shape: extra.shape ?? SHAPE, blocks, defaultHost: '127.0.0.1', release: (id) => released.push(id) };
  return { connector: new TcpConnector(context), blocks, released };
}

function fill(blocks: KvBlockStore, ids: number[]): void {
  for (const id of ids) blocks.writeBlock(id, Buffer.alloc(BLOCK_BYTES, id + 1));
}

function jobFor(params: Record<string, unknown>, hashes = ['h0', 'h1', 'h2'], firstBlock = 0): PullJob {
  return {
    source: { engineId: params.remote_engine_id as string, requestId: params.remote_request_id as string, host: params.remote_host as string, port: params.remote_port as number, blockIds: params.remote_block_ids as number[] },
    hashes,
    firstBlock,
  };
}

describe('FrameReader', () => {
  it('splits a byte stream into frames whatever the chunk boundaries', () => {
    const bytes = Buffer.concat([...encodeJson({ type: 'error', error: 'x' }), ...encodeFrame(FRAME_BYTES, Buffer.from([1, 2, 3]))]);
    for (const cut of [1, 3, 5, 9, bytes.length - 1]) {
      const reader = new FrameReader();
      const frames = [...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut))];
      expect(frames.map((f) => f.kind)).toEqual([FRAME_JSON, FRAME_BYTES]);
      expect([...frames[1].payload]).toEqual([1, 2, 3]);
    }
  });

  it('refuses frames of an unknown kind or beyond the size limit', () => {
    const header = Buffer.alloc(5);
    header.writeUInt32BE(4, 0);
    header.writeUInt8(9, 4);
    expect(() => new FrameReader().push(header)).toThrow('unknown frame kind 9');
    header.writeUInt32BE(MAX_FRAME_BYTES + 1, 0);
    header.writeUInt8(FRAME_BYTES, 4);
    expect(() => new FrameReader().push(header)).toThrow('exceeds');
  });
});

describe('TcpConnector', () => {
  beforeAll(() => jest.spyOn(console, 'info').mockImplementation(() => undefined));
  afterAll(() => jest.restoreAllMocks());
  const open: TcpConnector[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });
  const started = async (extra?: Parameters<typeof connector>[0]) => {
    const made = connector(extra);
    await made.connector.start();
    open.push(made.connector);
    return made;
  };

  describe.each([
    ['copied out by the engine thread', false],
    ['copied out of shared memory by the socket thread', true],
  ])('offers %s', (_how, shared) => {
  it('serves an offered transfer once, from the requested block on, and releases it', async () => {
    const producer = await started({ shared });
    const consumer = await started({ engineId: 'consumer' });
    fill(producer.blocks, [7, 3, 9]);
    const reads = jest.spyOn(producer.blocks, 'readBlock');
    const params = producer.connector.offer({ requestId: 'req-1', blockIds: [7, 3, 9], hashes: ['h0', 'h1', 'h2'] });
    expect(params).toMatchObject({ do_remote_prefill: true, do_remote_decode: false, remote_block_ids: [7, 3, 9], remote_engine_id: 'producer', remote_request_id: 'req-1', remote_host: '127.0.0.1', tp_size: 1 });
    expect(producer.connector.numOffered).toBe(1);
    const blocks = await consumer.connector.pull(jobFor(params, ['h0', 'h1', 'h2'], 1));
    expect(blocks.map((b) => [b[0], b[BLOCK_BYTES - 1], b.length])).toEqual([
      [4, 4, BLOCK_BYTES],
      [10, 10, BLOCK_BYTES],
    ]);
    expect(reads).toHaveBeenCalledTimes(shared ? 0 : 2);
    await waitFor(() => producer.released.length > 0, 5000, 'the release');
    expect(producer.released).toEqual(['req-1']);
    expect(producer.connector.numOffered).toBe(0);
    await expect(consumer.connector.pull(jobFor(params))).rejects.toThrow('unknown or expired transfer req-1');
  });

  it('refuses a pull whose prompt hashes, engine id or KV shape differ, keeping the offer', async () => {
    const producer = await started({ shared });
    const other = await started({ engineId: 'consumer', shape: { ...SHAPE, head_dim: 8 } });
    const consumer = await started({ engineId: 'consumer' });
    const params = producer.connector.offer({ requestId: 'req-2', blockIds: [1, 2, 3], hashes: ['h0', 'h1', 'h2'] });
    await expect(consumer.connector.pull(jobFor(params, ['h0', 'hX', 'h2']))).rejects.toThrow('block hashes differ');
    await expect(consumer.connector.pull(jobFor({ ...params, remote_engine_id: 'someone-else' }))).rejects.toThrow('not someone-else');
    await expect(other.connector.pull(jobFor(params))).rejects.toThrow('KV shape mismatch: head_dim 8 != 4');
    expect(producer.connector.numOffered).toBe(1);
    expect(producer.released).toEqual([]);
  });

  it('releases an offer nobody pulls after abort_request_timeout', async () => {
    const producer = await started({ timeout: 0.2, shared });
    const consumer = await started({ engineId: 'consumer' });
    const params = producer.connector.offer({ requestId: 'req-3', blockIds: [1], hashes: ['h0'] });
    await new Promise((r) => setTimeout(r, 400));
    expect(producer.released).toEqual(['req-3']);
    expect(producer.connector.numOffered).toBe(0);
    await expect(consumer.connector.pull(jobFor(params, ['h0']))).rejects.toThrow('unknown or expired transfer req-3');
  });

  it('refuses a pull of a withdrawn offer (its KV went with the runner) and releases it at once', async () => {
    const producer = await started({ shared });
    const consumer = await started({ engineId: 'consumer' });
    const params = producer.connector.offer({ requestId: 'req-4', blockIds: [2], hashes: ['h0'] });
    producer.connector.withdrawAll();
    expect(producer.released).toEqual(['req-4']);
    await expect(consumer.connector.pull(jobFor(params, ['h0']))).rejects.toThrow('unknown or expired transfer req-4');
  });
  });

  it('fails a pull when the producer is unreachable', async () => {
    const consumer = await started({ engineId: 'consumer' });
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(consumer.connector.pull(jobFor({ remote_engine_id: 'producer', remote_request_id: 'x', remote_host: '127.0.0.1', remote_port: port, remote_block_ids: [] }))).rejects.toThrow(/ECONNREFUSED/);
  });

  describe('against a producer that misbehaves', () => {
    const servers: net.Server[] = [];
    afterEach(async () => {
      await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
    });
    /** A raw server answering every pull with `reply`'s frames (then closing, or hanging when `hang`). */
    const fakeProducer = async (reply: (payload: Buffer) => Buffer[], hang = false) => {
      const server = net.createServer((socket) => {
        socket.once('data', () => {
          const payload = Buffer.alloc(BLOCK_BYTES, 5);
          for (const b of reply(payload)) socket.write(b);
          if (!hang) socket.end();
        });
        socket.on('error', () => undefined);
      });
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return { remote_engine_id: 'producer', remote_request_id: 'r', remote_host: '127.0.0.1', remote_port: (server.address() as net.AddressInfo).port, remote_block_ids: [0] };
    };
    const header = (payload: Buffer, digest = sha256(payload), shape = SHAPE) => encodeJson({ type: 'blocks', shape, blocks: [{ bytes: payload.length, sha256: digest }] });

    it('rejects a block whose checksum does not match', async () => {
      const consumer = await started({ engineId: 'consumer' });
      const params = await fakeProducer((p) => [...header(p, sha256(Buffer.from('other'))), ...encodeFrame(FRAME_BYTES, p)]);
      await expect(consumer.connector.pull(jobFor(params, ['h0']))).rejects.toThrow('block checksum mismatch');
    });

    it('rejects a block of the wrong length and a reply of another shape', async () => {
      const consumer = await started({ engineId: 'consumer' });
      const short = await fakeProducer((p) => [...header(p.subarray(8)), ...encodeFrame(FRAME_BYTES, p.subarray(8))]);
      await expect(consumer.connector.pull(jobFor(short, ['h0']))).rejects.toThrow(`a block holds ${BLOCK_BYTES}`);
      const shaped = await fakeProducer((p) => [...header(p, sha256(p), { ...SHAPE, kv_dtype: 'float16' }), ...encodeFrame(FRAME_BYTES, p)]);
      await expect(consumer.connector.pull(jobFor(shaped, ['h0']))).rejects.toThrow('KV shape mismatch: kv_dtype float16 != float32');
    });

    it('rejects a transfer cut off midway and one that never ends', async () => {
      const consumer = await started({ engineId: 'consumer' });
      const cut = await fakeProducer((p) => [...header(p), encodeFrame(FRAME_BYTES, p)[0], p.subarray(0, 10)]);
      await expect(consumer.connector.pull(jobFor(cut, ['h0']))).rejects.toThrow('connection closed');
      const silent = await fakeProducer(() => [], true);
      await expect(consumer.connector.pull(jobFor(silent, ['h0']))).rejects.toThrow(/no answer within|longer than/);
    }, 10_000);
  });
});
