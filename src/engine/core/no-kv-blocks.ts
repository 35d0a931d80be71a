// The scheduler's block manager for pooling models: a pooled sequence runs whole in one step and
// nothing of it is kept, so every allocation succeeds and there is nothing to cache, share or free.

import type { BlockCopy, BlockManager, PrefixHit } from './kv-cache-manager';

export class NoKvBlocks implements BlockManager {
  readonly enablePrefixCaching = false;

  findPrefixHit(): PrefixHit {
    return { blockIds: [], numTokens: 0 };
  }

  allocate(): boolean {
    return true;
  }

  cacheComputedBlocks(): void {}

  fork(): BlockCopy[] | null {
    return null;
  }

  free(): void {}

  trim(): void {}
}
