import { createHash } from 'node:crypto';

/**
 * Hash of one full KV block, chained on the previous block's hash so that equal tokens
 * at different prefixes never collide. The cache salt enters the first block only;
 * the chain carries it into every later block, so two salts never share any block.
 */
export function hashBlock(
  parentHash: string | null,
  tokens: readonly number[],
  cacheSalt: string | null,
): string {
  const h = createHash('sha256');
  if (parentHash === null) {
    // A distinct tag keeps "no salt" apart from the empty-string salt.
    h.update(cacheSalt === null ? 'nosalt' : `salt:${cacheSalt}`);
  } else {
    h.update(parentHash);
  }
  h.update(new Uint8Array(Int32Array.from(tokens).buffer));
  return h.digest('base64');
}
