// In-process responses store: a least-recently-used map bounded in bytes (lru-cache), with an
// optional time-to-live. Records are kept as JSON text, so a caller never shares objects with
// the store (the same copy semantics as Redis) and the size bound is the text length.

import { LRUCache } from 'lru-cache';
import { conditionHolds, ResponsesStoreError, type PutCondition, type ResponsesStore, type StoredRecord } from './responses-store';

export interface MemoryStoreOptions {
  /** Most bytes of JSON kept; the least recently used records go first. */
  maxBytes: number;
  /** Seconds a record lives after its last write; 0 = until evicted. */
  ttlSeconds: number;
}

interface Entry {
  status: string;
  json: string;
}

export class MemoryResponsesStore implements ResponsesStore {
  readonly kind = 'memory';
  readonly reachable = true;
  private readonly cache: LRUCache<string, Entry>;
  private readonly stoppedListeners: Array<(id: string) => void> = [];

  constructor(private readonly options: MemoryStoreOptions) {
    this.cache = new LRUCache<string, Entry>({
      maxSize: options.maxBytes,
      sizeCalculation: (entry, key) => entry.json.length + key.length,
      // Expiry is checked on read, not by lru-cache's ttlAutopurge: that arms one setTimeout per
      // record, and a TTL past setTimeout's 24.8-day limit (the default is 30 days) fires after
      // 1 ms and re-arms forever, a busy loop per record. Expired records still count against
      // maxSize until evicted, so the byte bound holds either way.
      ...(options.ttlSeconds > 0 ? { ttl: options.ttlSeconds * 1000 } : {}),
    });
  }

  // The interface is asynchronous (Redis); here every call completes at once.

  get(id: string): Promise<StoredRecord | null> {
    const entry = this.cache.get(id);
    return Promise.resolve(entry ? { id, status: entry.status, data: JSON.parse(entry.json) as unknown, bytes: entry.json.length } : null);
  }

  status(id: string): Promise<string | null> {
    return Promise.resolve(this.cache.get(id, { updateAgeOnGet: false })?.status ?? null);
  }

  put(record: StoredRecord, condition?: PutCondition): Promise<boolean> {
    // Check and write happen in one synchronous step: no other writer can come between them.
    const current = this.cache.get(record.id, { updateAgeOnGet: false })?.status ?? null;
    if (!conditionHolds(current, condition)) return Promise.resolve(false);
    const entry = { status: record.status, json: JSON.stringify(record.data) };
    this.cache.set(record.id, entry);
    if (this.cache.peek(record.id) !== entry) {
      return Promise.reject(
        new ResponsesStoreError(
          `Response ${record.id} (${entry.json.length} bytes) is larger than the in-process store (--responses-store-max-size ${this.options.maxBytes}).`,
        ),
      );
    }
    return Promise.resolve(true);
  }

  delete(id: string): Promise<boolean> {
    return Promise.resolve(this.cache.delete(id));
  }

  announceStopped(id: string): Promise<void> {
    for (const listener of this.stoppedListeners) listener(id);
    return Promise.resolve();
  }

  onStopped(listener: (id: string) => void): Promise<void> {
    this.stoppedListeners.push(listener);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.cache.clear();
    return Promise.resolve();
  }
}
