// Picks the responses store backend from --responses-store: 'memory' (the default) or a
// redis:// / rediss:// URL.

import { MemoryResponsesStore } from './memory-store';
import { RedisResponsesStore } from './redis-store';
import type { ResponsesStore } from './responses-store';

export * from './responses-store';

export interface ResponsesStoreConfig {
  /** 'memory' or redis://host:port/db (rediss:// for TLS). */
  url: string;
  ttlSeconds: number;
  /** Redis backend only: milliseconds a command may take. */
  timeoutMs: number;
  /** In-process backend only. */
  maxBytes: number;
}

export function isRedisUrl(url: string): boolean {
  return /^rediss?:\/\//i.test(url);
}

export async function createResponsesStore(config: ResponsesStoreConfig): Promise<ResponsesStore> {
  if (isRedisUrl(config.url)) return RedisResponsesStore.connect({ url: config.url, ttlSeconds: config.ttlSeconds, timeoutMs: config.timeoutMs });
  return new MemoryResponsesStore({ maxBytes: config.maxBytes, ttlSeconds: config.ttlSeconds });
}
