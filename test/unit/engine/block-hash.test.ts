import { createHash } from 'node:crypto';
import { hashBlock } from '../../../src/engine/core/block-hash';

/** The digest written out step by step: SHA-256 of the head's UTF-8 bytes, then each token as int32 little-endian. */
function reference(head: string, tokens: number[]): string {
  const bytes = Buffer.alloc(tokens.length * 4);
  tokens.forEach((t, i) => bytes.writeInt32LE(t, i * 4));
  return createHash('sha256').update(Buffer.from(head, 'utf8')).update(bytes).digest('base64');
}

describe('hashBlock', () => {
  const tokens = [1, 29871, 0, 31999, 7, 7, 7, 123456, 2, 3, 4, 5, 6, 8, 9, 10];

  it('is SHA-256 of the parent hash (or salt tag) and the tokens', () => {
    expect(hashBlock(null, tokens, null)).toBe(reference('nosalt', tokens));
    expect(hashBlock(null, tokens, 'tenant-ä')).toBe(reference('salt:tenant-ä', tokens));
    const first = hashBlock(null, tokens, null);
    expect(hashBlock(first, tokens, 'ignored after the first block')).toBe(reference(first, tokens));
  });

  it('hashes tokens[start, end) as the slice would be', () => {
    const seq = [...tokens, ...tokens.map((t) => t + 1), 42];
    expect(hashBlock('p', seq, null, 16, 32)).toBe(hashBlock('p', seq.slice(16, 32), null));
    expect(hashBlock('p', seq, null, 16, 32)).not.toBe(hashBlock('p', seq, null, 0, 16));
  });

  it('keeps no salt, an empty salt and different parents apart', () => {
    const hashes = new Set([hashBlock(null, tokens, null), hashBlock(null, tokens, ''), hashBlock(null, tokens, 'a'), hashBlock('x', tokens, null)]);
    expect(hashes.size).toBe(4);
  });

  it('takes a long salt (the scratch buffer grows)', () => {
    const salt = 's'.repeat(5000);
    expect(hashBlock(null, tokens, salt)).toBe(reference(`salt:${salt}`, tokens));
    expect(hashBlock(null, tokens, null)).toBe(reference('nosalt', tokens));
  });
});
