// The seam between the engine core and a way of moving KV blocks between replicas (vLLM's
// KVConnectorBase_V1, reduced to what a pull-based connector needs): a producer offers a finished
// prefill's blocks, a consumer pulls them. The core decides which blocks; the connector moves bytes.

import type { KvBlockStore } from '../../model/types';
import type { KvTransferConfig } from './kv-transfer-config';
import type { RemotePrefillSource } from './kv-transfer-params';
import type { KvShape } from './wire';

/** A finished prefill's prompt blocks, pinned until pulled or expired. */
export interface OfferedTransfer {
  /** The producer's request id: what the consumer's pull names. */
  requestId: string;
  blockIds: readonly number[];
  /** Chained hashes of the prompt, one per block (the last may cover a partial block). */
  hashes: readonly string[];
}

/** A consumer's pull of blocks [firstBlock, hashes.length) of a remote prompt. */
export interface PullJob {
  source: RemotePrefillSource;
  hashes: readonly string[];
  firstBlock: number;
}

export interface KvConnectorContext {
  config: KvTransferConfig;
  /** What the peer's blocks must match. */
  shape: KvShape;
  blocks: KvBlockStore;
  /** The host to listen on and advertise when the config names none. */
  defaultHost: string;
  /** An offered transfer's blocks may be freed: sent, expired unpulled, or withdrawn (its KV is gone). */
  release(requestId: string, reason: 'sent' | 'expired' | 'withdrawn'): void;
}

export interface KvConnector {
  /** Starts listening (a producer); resolves once the port is bound. */
  start(): Promise<void>;
  /** Keeps the transfer for a consumer; returns the kv_transfer_params of the prefill's response. */
  offer(transfer: OfferedTransfer): Record<string, unknown>;
  /** The blocks' bytes, verified, in order; rejects on any failure (the caller prefills locally). */
  pull(job: PullJob): Promise<Buffer[]>;
  /** Withdraws every offer (each is released): a pull of one is refused. */
  withdrawAll(): void;
  /** Transfers offered and not yet pulled or expired. */
  readonly numOffered: number;
  close(): Promise<void>;
}

export type KvConnectorFactory = (context: KvConnectorContext) => KvConnector;
