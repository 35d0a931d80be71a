// The engine core's side of --kv-transfer-config (vLLM's connector scheduler + worker halves in one
// thread): checks each request's kv_transfer_params, pins a finished prefill's prompt blocks and
// offers them through the connector, and pulls a decode request's prompt KV into the blocks the
// scheduler gave it. Pulls run in the connector while steps go on; their results are applied
// between steps, and only to a sequence still waiting for them, so an abort never races a write.

import { RequestValidationError } from '../errors';
import { encoderSpecOf } from '../../model/encoder-spec';
import type { KvBlockStore, ModelRunner } from '../../model/types';
import type { EngineRequest, KvTransferStats } from '../types';
import type { KvConnector } from '../kv-transfer/kv-connector';
import { isConsumer, isProducer, type KvTransferConfig } from '../kv-transfer/kv-transfer-config';
import { parseKvTransferParams, type KvTransferRole } from '../kv-transfer/kv-transfer-params';
import { hashBlock } from './block-hash';
import { KvCacheManager, type EngineKvManager } from './kv-cache-manager';
import type { Scheduler } from './scheduler';
import type { Sequence } from './sequence';

interface Completed {
  seq: Sequence;
  firstBlock: number;
  blocks: Buffer[] | null;
  error: string | null;
}

/** Of the requests whose pull ended: their prompt tokens, those from the local prefix cache, those pulled. */
export interface RemotePromptTokens {
  total: number;
  localHit: number;
  external: number;
}

/** What the agent tells the core: a pull ended (step again), pinned blocks were let go (report the stats). */
export interface KvTransferHooks {
  wake(): void;
  released(): void;
}

export class KvTransferAgent {
  private readonly pinned = new Map<string, readonly number[]>();
  private readonly completed: Completed[] = [];
  private stats: KvTransferStats = emptyTransferStats();

  constructor(
    private readonly config: KvTransferConfig,
    private readonly kv: KvCacheManager,
    readonly blocks: KvBlockStore,
    private readonly hooks: KvTransferHooks,
    /** Set once the connector exists (it needs `release`, which needs this agent). */
    private connector: KvConnector | null = null,
  ) {}

  attach(connector: KvConnector): void {
    this.connector = connector;
  }

  /** The request's role in a transfer (null: none); a 400 for params this replica cannot honour. */
  roleOf(request: EngineRequest): KvTransferRole | null {
    if (request.kvTransferParams == null) return null;
    const role = parseKvTransferParams(request.kvTransferParams);
    if (role === null) return null;
    const refuse = (message: string): never => {
      throw new RequestValidationError(`kv_transfer_params: ${message}`, 'kv_transfer_params');
    };
    if (role.kind === 'send' && !isProducer(this.config)) refuse(`do_remote_decode needs a producer; this replica's kv_role is ${this.config.role}`);
    if (role.kind === 'receive' && !isConsumer(this.config)) refuse(`do_remote_prefill needs a consumer; this replica's kv_role is ${this.config.role}`);
    const p = request.params;
    if (p.n > 1 || (p.best_of ?? 1) > 1) refuse('a disaggregated request runs one sequence (n and best_of 1)');
    if (p.use_beam_search) refuse('beam search is not disaggregated');
    if (role.kind === 'receive' && p.prompt_logprobs !== null) refuse('prompt_logprobs need the prompt computed here; send them without do_remote_prefill');
    return role;
  }

  /** Producer: pins the finished prefill's prompt blocks and returns the params a decode replica pulls them with (null: nothing to offer). */
  offer(requestId: string, seq: Sequence): Record<string, unknown> | null {
    if (!this.connector || seq.numComputedTokens < seq.numPromptTokens) return null;
    const blockIds = this.kv.blockTable(seq.seqId).slice(0, this.kv.blocksFor(seq.numPromptTokens));
    if (blockIds.length === 0) return null;
    this.kv.pinBlocks(blockIds);
    this.pinned.set(requestId, blockIds);
    return this.connector.offer({ requestId, blockIds, hashes: promptHashes(seq, this.kv.blockSize) });
  }

  /** The connector is done with a transfer (sent, expired or withdrawn): its blocks go back. */
  release(requestId: string, reason: 'sent' | 'expired' | 'withdrawn'): void {
    const ids = this.pinned.get(requestId);
    if (!ids) return;
    this.pinned.delete(requestId);
    this.kv.unpinBlocks(ids);
    if (reason === 'expired') this.stats.numExpired++;
    this.hooks.released();
  }

  /** The transfer stats since the last call (undefined when nothing happened). */
  drainStats(): KvTransferStats | undefined {
    const s = this.stats;
    if (s.transferSeconds.length === 0 && s.numFailedTransfers === 0 && s.numExpired === 0) return undefined;
    this.stats = emptyTransferStats();
    return s;
  }

  /** Consumer (the scheduler's remoteKv hook): pulls the prompt blocks after the first `localTokens`. */
  start(seq: Sequence, localTokens: number): void {
    const firstBlock = Math.floor(localTokens / this.kv.blockSize);
    const hashes = promptHashes(seq, this.kv.blockSize);
    const started = performance.now();
    const done = (blocks: Buffer[] | null, error: string | null) => {
      if (blocks) {
        this.stats.transferSeconds.push((performance.now() - started) / 1000);
        this.stats.transferBytes.push(blocks.reduce((n, b) => n + b.length, 0));
      } else {
        this.stats.numFailedTransfers++;
      }
      this.completed.push({ seq, firstBlock, blocks, error });
      this.hooks.wake();
    };
    if (!this.connector) {
      done(null, 'no KV connector');
      return;
    }
    this.connector.pull({ source: seq.remotePrefill!.source, hashes, firstBlock }).then(
      (blocks) => done(blocks, null),
      (err: unknown) => done(null, err instanceof Error ? err.message : String(err)),
    );
  }

  hasCompleted(): boolean {
    return this.completed.length > 0;
  }

  /**
   * Between steps: writes each finished pull into its sequence's blocks and lets the sequence run
   * (a failed one prefills locally). Returns where those requests' prompt tokens come from.
   */
  applyCompleted(scheduler: Scheduler): RemotePromptTokens {
    const tokens: RemotePromptTokens = { total: 0, localHit: 0, external: 0 };
    for (const { seq, firstBlock, blocks, error } of this.completed.splice(0)) {
      if (!scheduler.isAwaitingKv(seq)) continue;
      const localHit = seq.numComputedTokens;
      if (blocks === null) {
        console.warn(`[kv-transfer] request ${seq.requestId}: pulling its prompt KV failed (${error}); prefilling it here`);
        scheduler.completeRemoteKv(seq, null);
      } else {
        const table = this.kv.blockTable(seq.seqId);
        blocks.forEach((bytes, i) => this.blocks.writeBlock(table[firstBlock + i], bytes));
        scheduler.completeRemoteKv(seq, Math.min((firstBlock + blocks.length) * this.kv.blockSize, seq.numTokens));
      }
      tokens.total += seq.numPromptTokens;
      tokens.localHit += localHit;
      tokens.external += seq.numComputedTokens - localHit;
    }
    return tokens;
  }

  /** Every offer is withdrawn and its blocks freed (the KV they held is gone). */
  withdrawAll(): void {
    this.connector?.withdrawAll();
  }

  async close(): Promise<void> {
    await this.connector?.close();
  }
}

/** The agent over the core's KV manager and runner; refuses models whose KV cannot move as whole blocks of one pool. */
export function createKvTransferAgent(config: KvTransferConfig, kv: EngineKvManager, runner: () => ModelRunner, hooks: KvTransferHooks): KvTransferAgent {
  const model = runner().config;
  const why = !(kv instanceof KvCacheManager)
    ? 'its KV cache has several pools (sliding-window layers)'
    : encoderSpecOf(model)
      ? 'it is an encoder-decoder model'
      : !runner().kvBlocks
        ? 'its runner keeps no paged KV cache'
        : null;
  if (why !== null) throw new Error(`--kv-transfer-config: ${model.architecture} cannot transfer KV: ${why}`);
  return new KvTransferAgent(config, kv as KvCacheManager, currentKvBlocks(runner), hooks);
}

/** The blocks of whichever runner is current (wake_up replaces it). */
function currentKvBlocks(runner: () => ModelRunner): KvBlockStore {
  const blocks = () => runner().kvBlocks!;
  return {
    get dtype() {
      return blocks().dtype;
    },
    blockBytes: (pool) => blocks().blockBytes(pool),
    readBlock: (block, pool) => blocks().readBlock(block, pool),
    writeBlock: (block, bytes, pool) => blocks().writeBlock(block, bytes, pool),
    sharedLayout: () => blocks().sharedLayout?.() ?? null,
  };
}

/** Without a connector the params ask for nothing here: said once per process, not per request. */
let warnedNoConnector = false;
export function ignoredKvTransfer(request: EngineRequest): null {
  const params = request.kvTransferParams;
  if (params && (params.do_remote_decode === true || params.do_remote_prefill === true) && !warnedNoConnector) {
    warnedNoConnector = true;
    console.warn('[kv-transfer] kv_transfer_params ask for a KV transfer, but the server runs without --kv-transfer-config: ignored');
  }
  return null;
}

/** Chained hashes of the prompt's blocks, the last over what the prompt has of it: the same on every replica for the same prompt, salt and adapter. */
export function promptHashes(seq: Pick<Sequence, 'tokenIds' | 'numPromptTokens' | 'cacheSalt' | 'loraKey'>, blockSize: number): string[] {
  const hashes: string[] = [];
  for (let start = 0; start < seq.numPromptTokens; start += blockSize) {
    hashes.push(hashBlock(hashes.at(-1) ?? null, seq.tokenIds, seq.cacheSalt, start, Math.min(start + blockSize, seq.numPromptTokens), seq.loraKey ?? null));
  }
  return hashes;
}

function emptyTransferStats(): KvTransferStats {
  return { transferSeconds: [], transferBytes: [], numFailedTransfers: 0, numExpired: 0 };
}
