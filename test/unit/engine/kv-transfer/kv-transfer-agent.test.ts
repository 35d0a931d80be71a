// The engine core's KV transfer agent with a scripted connector and an in-memory block store:
// which requests it refuses, what a finished prefill pins and offers, and how a finished pull is
// written into the waiting sequence's blocks (or, failed or too late, is not).

import { KvTransferAgent } from '../../../../src/engine/core/kv-transfer-agent';
import { KvCacheManager } from '../../../../src/engine/core/kv-cache-manager';
import { Scheduler } from '../../../../src/engine/core/scheduler';
import { Sequence } from '../../../../src/engine/core/sequence';
import type { KvConnector, OfferedTransfer, PullJob } from '../../../../src/engine/kv-transfer/kv-connector';
import { normalizeKvTransferConfig, type KvRole } from '../../../../src/engine/kv-transfer/kv-transfer-config';
import { defaultSamplingParams } from '../../../../src/engine/sampling-params';
import type { EngineRequest } from '../../../../src/engine/types';
import type { KvBlockStore } from '../../../../src/model/types';
import { stepScheduler } from '../../../helpers/scheduler-step';

const BLOCK = 4;
const BYTES = 8;

class ScriptedConnector implements KvConnector {
  readonly offered: OfferedTransfer[] = [];
  readonly pulls: Array<{ job: PullJob; resolve: (b: Buffer[]) => void; reject: (e: Error) => void }> = [];
  numOffered = 0;
  start = () => Promise.resolve();
  close = () => Promise.resolve();
  withdrawAll = () => undefined;
  offer(transfer: OfferedTransfer): Record<string, unknown> {
    this.offered.push(transfer);
    return { do_remote_prefill: true, remote_request_id: transfer.requestId };
  }
  pull(job: PullJob): Promise<Buffer[]> {
    return new Promise((resolve, reject) => this.pulls.push({ job, resolve, reject }));
  }
}

function setup(role: KvRole = 'kv_both') {
  const kv = new KvCacheManager(16, BLOCK, true);
  const written = new Map<number, number>();
  const blocks: KvBlockStore = { dtype: 'float32', blockBytes: () => BYTES, readBlock: () => Buffer.alloc(BYTES), writeBlock: (b, bytes) => written.set(b, bytes[0]) };
  let wakes = 0;
  let releases = 0;
  const config = normalizeKvTransferConfig({ kv_connector: 'TcpConnector', kv_role: role }, ['TcpConnector'], {});
  const agent = new KvTransferAgent(config, kv, blocks, { wake: () => wakes++, released: () => releases++ });
  const connector = new ScriptedConnector();
  agent.attach(connector);
  const scheduler = new Scheduler({ maxNumSeqs: 4, maxNumBatchedTokens: 64, policy: 'fcfs', remoteKv: { start: (seq, local) => agent.start(seq, local) } }, kv);
  return { kv, agent, connector, scheduler, written, counts: () => ({ wakes, releases }) };
}

const REMOTE = { do_remote_prefill: true, remote_engine_id: 'p', remote_request_id: 'r', remote_host: '127.0.0.1', remote_port: 5600, remote_block_ids: [3, 4, 5] };

function request(kvTransferParams: Record<string, unknown>, params: Partial<EngineRequest['params']> = {}): EngineRequest {
  return { requestId: 'q', promptTokenIds: [1, 2, 3], params: { ...defaultSamplingParams(), ...params }, kvTransferParams };
}

function decodeSeq(agent: KvTransferAgent, promptLen: number): Sequence {
  const seq = new Sequence('d', 'd', 0, Array.from({ length: promptLen }, (_, i) => 20 + i), promptLen, 0, null, false);
  const role = agent.roleOf(request(REMOTE));
  if (role?.kind !== 'receive') throw new Error('expected a receive role');
  seq.remotePrefill = { source: role.source, state: 'pending' };
  return seq;
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('KvTransferAgent', () => {
  it('refuses what one replica of this role cannot do, naming kv_transfer_params', () => {
    const producer = setup('kv_producer').agent;
    const consumer = setup('kv_consumer').agent;
    expect(() => producer.roleOf(request(REMOTE))).toThrow("do_remote_prefill needs a consumer; this replica's kv_role is kv_producer");
    expect(() => consumer.roleOf(request({ do_remote_decode: true }))).toThrow('do_remote_decode needs a producer');
    const both = setup().agent;
    expect(() => both.roleOf(request({ do_remote_decode: true }, { n: 2 }))).toThrow('n and best_of 1');
    expect(() => both.roleOf(request(REMOTE, { prompt_logprobs: 1 }))).toThrow('prompt_logprobs');
    expect(both.roleOf(request({ do_remote_decode: false }))).toBeNull();
    expect(both.roleOf(request({ do_remote_decode: true }))).toEqual({ kind: 'send' });
  });

  it('pins a finished prefill’s prompt blocks and offers them with the prompt hashes, until released', () => {
    const { kv, agent, connector, counts } = setup();
    const seq = new Sequence('p', 'p', 0, [1, 2, 3, 4, 5, 6, 7], 6, 0, null, false);
    kv.allocate(seq, 0, 7);
    seq.numComputedTokens = 6;
    expect(agent.offer('p-req', seq)).toEqual({ do_remote_prefill: true, remote_request_id: 'p-req' });
    expect(connector.offered[0].blockIds).toEqual(kv.blockTable('p').slice(0, 2));
    expect(connector.offered[0].hashes).toHaveLength(2);
    kv.free('p');
    expect(kv.usage()).toBe(2 / 16);
    agent.release('p-req', 'expired');
    expect(kv.usage()).toBe(0);
    expect(counts().releases).toBe(1);
    expect(agent.drainStats()).toEqual({ transferSeconds: [], transferBytes: [], numFailedTransfers: 0, numExpired: 1 });
    expect(agent.drainStats()).toBeUndefined();
  });

  it('writes a pull into the waiting sequence’s blocks, then lets it compute its last prompt token', async () => {
    const { kv, agent, connector, scheduler, written, counts } = setup();
    const seq = decodeSeq(agent, 10);
    scheduler.addSequence(seq);
    stepScheduler(scheduler);
    expect(connector.pulls).toHaveLength(1);
    expect(connector.pulls[0].job.firstBlock).toBe(0);
    expect(connector.pulls[0].job.hashes).toHaveLength(3);
    connector.pulls[0].resolve([Buffer.alloc(BYTES, 7), Buffer.alloc(BYTES, 8), Buffer.alloc(BYTES, 9)]);
    await flush();
    expect(counts().wakes).toBe(1);
    expect(agent.hasCompleted()).toBe(true);
    expect(agent.applyCompleted(scheduler)).toEqual({ total: 10, localHit: 0, external: 9 });
    const table = kv.blockTable('d');
    expect([written.get(table[0]), written.get(table[1]), written.get(table[2])]).toEqual([7, 8, 9]);
    expect(stepScheduler(scheduler).scheduled.map((s) => s.numNewTokens)).toEqual([1]);
    expect(agent.drainStats()?.transferBytes).toEqual([3 * BYTES]);
  });

  it('prefills locally after a failed pull, and writes nothing for a sequence no longer waiting', async () => {
    const { agent, connector, scheduler, written } = setup();
    const seq = decodeSeq(agent, 10);
    scheduler.addSequence(seq);
    stepScheduler(scheduler);
    connector.pulls[0].reject(new Error('connection refused'));
    await flush();
    jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    expect(agent.applyCompleted(scheduler)).toEqual({ total: 10, localHit: 0, external: 0 });
    expect(stepScheduler(scheduler).scheduled.map((s) => s.numNewTokens)).toEqual([10]);
    expect(agent.drainStats()?.numFailedTransfers).toBe(1);

    const late = setup();
    const aborted = decodeSeq(late.agent, 10);
    late.scheduler.addSequence(aborted);
    stepScheduler(late.scheduler);
    late.scheduler.finishSequences(['d']);
    late.connector.pulls[0].resolve([Buffer.alloc(BYTES, 1), Buffer.alloc(BYTES, 1), Buffer.alloc(BYTES, 1)]);
    await flush();
    expect(late.agent.applyCompleted(late.scheduler)).toEqual({ total: 0, localHit: 0, external: 0 });
    expect(late.written.size).toBe(0);
    expect(written.size).toBe(0);
  });
});
