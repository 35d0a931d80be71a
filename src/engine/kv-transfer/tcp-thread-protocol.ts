// Messages between TcpConnector (on the engine thread, beside the KV arrays) and its socket thread
// (tcp-transfer-thread.ts), which does the network I/O and checksums so that transfers go on at
// socket speed while engine steps hold the engine thread. Block bytes cross as one transferred
// ArrayBuffer of `count` blocks of `blockBytes` each.

import type { SharedKvLayout } from '../../model/runner/kv-cache';
import type { OfferedTransfer } from './kv-connector';
import type { RemotePrefillSource } from './kv-transfer-params';
import type { KvShape, PullRequest } from './wire';

export interface TcpThreadData {
  /** Where to listen (a producer); null: pulls only. */
  listen: { host: string; port: number } | null;
  shape: KvShape;
  /** This replica's engine id: a pull naming another is refused. */
  engineId: string;
  blockBytes: number;
  timeoutMs: number;
}

/** Engine thread → socket thread. */
export type ToTcpThread =
  | { type: 'pull'; id: number; source: RemotePrefillSource; hashes: string[]; firstBlock: number }
  | { type: 'blocks'; id: number; buffer: ArrayBuffer; count: number }
  | { type: 'refuse'; id: number; error: string }
  /** An offer whose blocks live in shared memory: the socket thread serves and expires it itself. */
  | { type: 'offer'; transfer: OfferedTransfer; layout: SharedKvLayout; expireMs: number }
  /** Offers the engine took back (their KV is gone): pulls of them are refused from now on. */
  | { type: 'withdraw'; requestIds: string[] }
  | { type: 'close' };

/** Socket thread → engine thread. */
export type FromTcpThread =
  | { type: 'listening'; port: number }
  | { type: 'listen-failed'; error: string }
  | { type: 'pulled'; id: number; buffer: ArrayBuffer; count: number }
  | { type: 'pull-failed'; id: number; error: string }
  /** A consumer's pull arrived: the engine thread checks it against its offer and answers with 'blocks' or 'refuse'. */
  | { type: 'read'; id: number; request: PullRequest }
  /** A shared-memory offer is done with: its blocks were copied out for a pull, or it expired unpulled. */
  | { type: 'released'; requestId: string; reason: 'sent' | 'expired' };
