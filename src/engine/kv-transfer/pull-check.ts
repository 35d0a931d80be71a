// What a producer checks before it serves a pull: the engine it names, the KV shape, the prompt's
// block hashes against the offer's, and the first block wanted. The same rules on the engine
// thread (offers it copies out itself) and the socket thread (offers in shared memory).

import type { OfferedTransfer } from './kv-connector';
import { shapeMismatch, type KvShape, type PullRequest } from './wire';

/** The offer's block ids the pull wants, or why it is refused. */
export function checkPull(request: PullRequest, offer: OfferedTransfer | undefined, engineId: string, shape: KvShape): { blockIds: readonly number[] } | { error: string } {
  if (request?.type !== 'pull' || typeof request.transfer !== 'string') return { error: 'expected a pull request' };
  if (request.engine_id !== engineId) return { error: `this is engine ${engineId}, not ${String(request.engine_id)}` };
  const mismatch = shapeMismatch(shape, request.shape);
  if (mismatch) return { error: `KV shape mismatch: ${mismatch}` };
  if (!offer) return { error: `unknown or expired transfer ${request.transfer}` };
  const hashes = Array.isArray(request.hashes) ? request.hashes : [];
  if (hashes.length !== offer.hashes.length || hashes.some((h, i) => h !== offer.hashes[i])) return { error: `the prompt's block hashes differ from transfer ${request.transfer}'s` };
  const first = request.first_block;
  if (!Number.isInteger(first) || first < 0 || first > offer.blockIds.length) return { error: `first_block ${String(first)} out of range` };
  return { blockIds: offer.blockIds.slice(first) };
}
