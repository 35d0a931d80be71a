// Redis responses store (--responses-store redis://host:port/db): one hash per response
// (`status`, `record`) under `ortllm:response:<id>`, expiring --responses-store-ttl seconds after
// its last write. Conditional writes run as one Lua script, so two replicas racing on the same
// response (a cancel here, the final result there) cannot both win. A cancel or delete is also
// published on `ortllm:response:stopped`, so the replica running the response aborts it at once.
//
// Client: @redis/client (node-redis), kept by Redis itself, promise API, no dependencies. The
// offline queue is off: while Redis is unreachable a command fails at once (the request gets a
// 503) instead of waiting for a reconnect that may never come.

import { createClient } from '@redis/client';
import { ResponsesStoreError, type PutCondition, type ResponsesStore, type StoredRecord } from './responses-store';

export interface RedisStoreOptions {
  url: string;
  /** Seconds a record lives after its last write; 0 = no expiry. */
  ttlSeconds: number;
  /** Key prefix (tests use their own to stay apart). */
  keyPrefix?: string;
}

const DEFAULT_PREFIX = 'ortllm:response:';

// KEYS[1] = key; ARGV = mode ('always' | 'absent' | 'status'), status, record, ttl ms, allowed statuses...
const CONDITIONAL_PUT = `
local current = redis.call('HGET', KEYS[1], 'status')
if ARGV[1] == 'absent' and current then return 0 end
if ARGV[1] == 'status' then
  if not current then return 0 end
  local allowed = false
  for i = 5, #ARGV do
    if ARGV[i] == current then allowed = true end
  end
  if not allowed then return 0 end
end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'record', ARGV[3])
if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 1
`;

function newClient(url: string, connected: () => boolean) {
  return createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 5000,
      // The first connection must succeed (start-up fails otherwise); later drops are retried.
      // A fresh Error: the client tests `instanceof Error`, which a socket error from another
      // realm (jest's sandbox) would fail, and it would then retry forever.
      reconnectStrategy: (retries: number, cause: Error) => (connected() ? Math.min(100 * 2 ** retries, 2000) : new Error(cause.message)),
    },
  });
}
type Client = ReturnType<typeof newClient>;

export class RedisResponsesStore implements ResponsesStore {
  readonly kind = 'redis';
  private readonly prefix: string;
  private subscriber: Client | null = null;

  private constructor(
    private readonly client: Client,
    private readonly ttlMs: number,
    keyPrefix: string | undefined,
  ) {
    this.prefix = keyPrefix ?? DEFAULT_PREFIX;
  }

  /** Connects (fails when Redis cannot be reached, so a misconfigured server does not start). */
  static async connect(options: RedisStoreOptions): Promise<RedisResponsesStore> {
    let lastError: Error | null = null;
    let connected = false;
    const client = newClient(options.url, () => connected);
    // Without a listener an 'error' event would crash the process; reconnects are automatic.
    client.on('error', (err: Error) => {
      lastError = err;
    });
    try {
      await client.connect();
      connected = true;
    } catch (err) {
      client.destroy();
      throw new ResponsesStoreError(`Cannot connect to the responses store at ${redactUrl(options.url)}: ${(lastError ?? (err as Error)).message}`);
    }
    return new RedisResponsesStore(client, options.ttlSeconds * 1000, options.keyPrefix);
  }

  private key(id: string): string {
    return this.prefix + id;
  }

  private async run<T>(what: string, command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (err) {
      throw new ResponsesStoreError(`Responses store (redis) failed to ${what}: ${(err as Error).message}`);
    }
  }

  async get(id: string): Promise<StoredRecord | null> {
    const fields = await this.run('read', () => this.client.hmGet(this.key(id), ['status', 'record']));
    const [status, json] = fields;
    if (status == null || json == null) return null;
    return { id, status, data: JSON.parse(json) };
  }

  async status(id: string): Promise<string | null> {
    return (await this.run('read', () => this.client.hGet(this.key(id), 'status'))) ?? null;
  }

  async put(record: StoredRecord, condition?: PutCondition): Promise<boolean> {
    const mode = !condition ? 'always' : 'absent' in condition ? 'absent' : 'status';
    const allowed = condition && 'statusIn' in condition ? [...condition.statusIn] : [];
    const args = [mode, record.status, JSON.stringify(record.data), String(this.ttlMs), ...allowed];
    const written = await this.run('write', () => this.client.eval(CONDITIONAL_PUT, { keys: [this.key(record.id)], arguments: args }));
    return written === 1;
  }

  async delete(id: string): Promise<boolean> {
    return (await this.run('delete', () => this.client.del(this.key(id)))) === 1;
  }

  private get stoppedChannel(): string {
    return `${this.prefix}stopped`;
  }

  async announceStopped(id: string): Promise<void> {
    await this.run('publish', () => this.client.publish(this.stoppedChannel, id));
  }

  async onStopped(listener: (id: string) => void): Promise<void> {
    if (!this.subscriber) {
      // A subscribed connection can run nothing else: a second one, reconnecting like the first.
      const subscriber = this.client.duplicate();
      subscriber.on('error', () => undefined);
      await this.run('subscribe', () => subscriber.connect());
      this.subscriber = subscriber;
    }
    await this.run('subscribe', () => this.subscriber!.subscribe(this.stoppedChannel, (message: string) => listener(message)));
  }

  async close(): Promise<void> {
    if (this.subscriber?.isOpen) await this.subscriber.close();
    if (this.client.isOpen) await this.client.close();
  }
}

/** The URL without its password, for messages. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
