// An image's identity for the encoder cache and the prefix cache (vLLM's MultiModalHasher, its
// mm_hash): SHA-256 over the size, the processor kwargs and a digest of the pixels. The pixels
// (36 MB for a 12-megapixel photo) are digested by WebCrypto, whose digest runs in libuv's thread
// pool, as sharp decodes there: the HTTP thread only waits. The rest is a few bytes.
import { createHash, webcrypto } from 'node:crypto';
import type { DecodedImage, MultiModalInput } from '../../engine/types';

export async function imageHash(image: DecodedImage, processorKwargs: Record<string, unknown>): Promise<string> {
  const pixels = Buffer.from(await webcrypto.subtle.digest('SHA-256', image.rgb)).toString('hex');
  return createHash('sha256')
    .update(JSON.stringify([image.width, image.height, sortedKeys(processorKwargs), pixels]))
    .digest('hex');
}

/**
 * Each prompt's image hashes, started now so they run while the prompt renders. A failure is
 * raised where the hashes are awaited, never as an unhandled rejection when nothing awaits them.
 */
export function startImageHashes(inputs: readonly (MultiModalInput | null)[]): (Promise<string[]> | null)[] {
  return inputs.map((input) => {
    if (!input) return null;
    const hashes = Promise.all(input.images.map((image) => imageHash(image, input.processorKwargs)));
    hashes.catch(() => {});
    return hashes;
  });
}

/** The same kwargs in any key order hash the same. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([k, v]) => [k, sortedKeys(v)]));
}
