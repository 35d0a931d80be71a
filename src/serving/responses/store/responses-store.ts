// Where stored responses live: an interface with an in-process backend (bounded LRU, the
// default) and a Redis backend, so replicas behind a load balancer share conversation state.
// Records are JSON; every write may carry a condition on the stored status, which is how
// "create only once", "never overwrite a finished response" and "cancel only what still runs"
// stay true with several writers (background runs, cancel requests, other replicas).

import { OpenAIHttpError } from '../../openai-error';

/** One stored response: what GET returns plus what previous_response_id continues from. */
export interface StoredRecord {
  id: string;
  /** The response's status, mirrored out of the record so backends can check it cheaply. */
  status: string;
  /** JSON-serializable payload (the response object, its input items, its conversation). */
  data: unknown;
  /** Set by get(): the stored JSON's length, what a follow-up turn reads and copies. */
  bytes?: number;
}

/**
 * When a put may write:
 * - `absent`: only if no record has this id (create);
 * - `statusIn`: only if the stored record's status is one of these (updates of a live response);
 * - undefined: always.
 */
export type PutCondition = { absent: true } | { statusIn: readonly string[] };

export interface ResponsesStore {
  /** 'memory' or 'redis' (logged at start-up). */
  readonly kind: string;
  /** Whether the last call (or health check) reached the store: the `ortllm_responses_store_up` gauge. */
  readonly reachable: boolean;
  get(id: string): Promise<StoredRecord | null>;
  /** The stored status alone (cheap: background runs poll it to notice a cancel from another replica). */
  status(id: string): Promise<string | null>;
  /** Writes `record` when `condition` holds; resolves to whether it wrote. */
  put(record: StoredRecord, condition?: PutCondition): Promise<boolean>;
  delete(id: string): Promise<boolean>;
  /** Tells every replica sharing the store that response `id` was cancelled or deleted. */
  announceStopped(id: string): Promise<void>;
  /** Calls `listener` with the id of every response announced stopped (by any replica). */
  onStopped(listener: (id: string) => void): Promise<void>;
  close(): Promise<void>;
}

/** The store failed the call (a 500 with this message unless a subclass says otherwise, never a silent loss). */
export class ResponsesStoreError extends OpenAIHttpError {
  constructor(message: string, status = 500) {
    super(status, message);
    this.name = 'ResponsesStoreError';
  }
}

/** Seconds a client is told to wait (Retry-After) while the store is unreachable. */
export const STORE_RETRY_AFTER_SECONDS = 2;

/** The store did not answer in time or cannot be reached: 503 with Retry-After, the request may be retried. */
export class StoreUnavailableError extends ResponsesStoreError {
  constructor(message: string) {
    super(message, 503);
    this.name = 'StoreUnavailableError';
    this.headers = { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) };
  }
}

/** Whether `condition` allows a write over `current` (the stored status, null when absent). */
export function conditionHolds(current: string | null, condition: PutCondition | undefined): boolean {
  if (!condition) return true;
  if ('absent' in condition) return current === null;
  return current !== null && condition.statusIn.includes(current);
}
