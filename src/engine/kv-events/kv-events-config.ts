// --kv-events-config (vLLM's KVEventsConfig keys and defaults): whether the engine publishes its
// prefix-cache changes, and where. Keys vLLM does not have, or values of the wrong type, are
// refused at start-up by name rather than ignored.

export type KvEventsPublisherKind = 'null' | 'zmq';

export interface KvEventsConfig {
  enableKvCacheEvents: boolean;
  /** vLLM: "zmq" when events are enabled and no publisher is named, else "null". */
  publisher: KvEventsPublisherKind;
  /** PUB socket: bound when it has a wildcard ("*", "::") or is ipc:// or inproc://, else connected. */
  endpoint: string;
  /** ROUTER socket answering replay requests; null = no replay. */
  replayEndpoint: string | null;
  /** Batches kept for replay. */
  bufferSteps: number;
  /** The PUB socket's send high-water mark, in messages (0 = none). */
  hwm: number;
  /** Batches waiting to be sent; more are dropped from the live stream (still replayable). 0 = unbounded. */
  maxQueueSize: number;
  topic: string;
}

export const KV_EVENTS_DEFAULTS: Omit<KvEventsConfig, 'publisher'> = {
  enableKvCacheEvents: false,
  endpoint: 'tcp://*:5557',
  replayEndpoint: null,
  bufferSteps: 10_000,
  hwm: 100_000,
  maxQueueSize: 100_000,
  topic: '',
};

const FLAG = '--kv-events-config';
const PUBLISHERS: readonly KvEventsPublisherKind[] = ['null', 'zmq'];

/** Each JSON key, its config field and how its value is checked. */
const KEYS = {
  enable_kv_cache_events: { field: 'enableKvCacheEvents', read: bool },
  publisher: { field: 'publisher', read: publisherKind },
  endpoint: { field: 'endpoint', read: nonEmptyString },
  replay_endpoint: { field: 'replayEndpoint', read: optionalEndpoint },
  buffer_steps: { field: 'bufferSteps', read: nonNegativeInt },
  hwm: { field: 'hwm', read: nonNegativeInt },
  max_queue_size: { field: 'maxQueueSize', read: nonNegativeInt },
  topic: { field: 'topic', read: string },
} as const satisfies Record<string, { field: keyof KvEventsConfig; read: (key: string, v: unknown) => unknown }>;

/** Parses and checks the flag's JSON; throws an Error whose message names the key at fault. */
export function parseKvEventsConfig(text: string): KvEventsConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${FLAG} must be a JSON object: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${FLAG} must be a JSON object`);
  return normalizeKvEventsConfig(raw as Record<string, unknown>);
}

export function normalizeKvEventsConfig(raw: Record<string, unknown>): KvEventsConfig {
  const out: Record<string, unknown> = { ...KV_EVENTS_DEFAULTS, publisher: null };
  for (const [key, value] of Object.entries(raw)) {
    if (!Object.hasOwn(KEYS, key)) throw new Error(`${FLAG}: unknown key "${key}" (vLLM's KVEventsConfig has: ${Object.keys(KEYS).join(', ')})`);
    const spec = KEYS[key as keyof typeof KEYS];
    out[spec.field] = spec.read(key, value);
  }
  const config = out as unknown as KvEventsConfig;
  config.publisher ??= config.enableKvCacheEvents ? 'zmq' : 'null';
  return config;
}

/** Whether this config publishes anything (vLLM's EventPublisherFactory: disabled or "null" publish nothing). */
export function publishesKvEvents(config: KvEventsConfig | null | undefined): config is KvEventsConfig {
  return !!config && config.enableKvCacheEvents && config.publisher !== 'null';
}

function bool(key: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new Error(`${FLAG}: ${key} must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function publisherKind(key: string, v: unknown): KvEventsPublisherKind | null {
  if (v === null) return null;
  if (typeof v !== 'string' || !(PUBLISHERS as readonly string[]).includes(v)) {
    throw new Error(`${FLAG}: ${key} must be one of ${PUBLISHERS.map((p) => `"${p}"`).join(', ')}, got ${JSON.stringify(v)}`);
  }
  return v as KvEventsPublisherKind;
}

function string(key: string, v: unknown): string {
  if (typeof v !== 'string') throw new Error(`${FLAG}: ${key} must be a string, got ${JSON.stringify(v)}`);
  return v;
}

function nonEmptyString(key: string, v: unknown): string {
  if (string(key, v) === '') throw new Error(`${FLAG}: ${key} must not be empty`);
  return v as string;
}

function optionalEndpoint(key: string, v: unknown): string | null {
  return v === null ? null : nonEmptyString(key, v);
}

function nonNegativeInt(key: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new Error(`${FLAG}: ${key} must be an integer >= 0, got ${JSON.stringify(v)}`);
  return v;
}
