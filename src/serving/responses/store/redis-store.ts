// Redis responses store (--responses-store redis://host:port/db): one hash per response
// (`status`, `record`) under `ortllm:response:<id>`, expiring --responses-store-ttl seconds after
// its last write. Conditional writes run as one Lua script, so two replicas racing on the same
// response (a cancel here, the final result there) cannot both win. A cancel or delete is also
// published on `ortllm:response:stopped`, so the replica running the response aborts it at once.
//
// Client: @redis/client (node-redis), kept by Redis itself, promise API, no dependencies. The
// offline queue is off and every command has a timeout: while Redis is unreachable or stalled a
// call fails within --responses-store-timeout (the request gets a 503 with Retry-After) instead
// of waiting for a reconnect that may never come. A ping at the same interval keeps `reachable`
// current while idle; changes are logged once each way.

import { createClient, ErrorReply } from '@redis/client';
import { redactUrls } from '../../../config/redact';
import { ResponsesStoreError, StoreUnavailableError, type PutCondition, type ResponsesStore, type StoredRecord } from './responses-store';

export interface RedisStoreOptions {
  url: string;
  /** Seconds a record lives after its last write; 0 = no expiry. */
  ttlSeconds: number;
  /** Milliseconds every command may take before it fails as unavailable. */
  timeoutMs: number;
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

/** How often an idle store is pinged so its reachability stays current. */
const HEALTH_CHECK_INTERVAL_MS = 5000;

// Replies that say "not now" rather than "never": answered 503 like a lost connection.
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN|OOM)\b/;

function newClient(url: string, timeoutMs: number, connected: () => boolean) {
  return createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: Math.max(5000, timeoutMs),
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
  private up = true;
  private readonly healthCheck: NodeJS.Timeout;

  private constructor(
    private readonly client: Client,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
    keyPrefix: string | undefined,
  ) {
    this.prefix = keyPrefix ?? DEFAULT_PREFIX;
    this.healthCheck = setInterval(() => void this.run('ping', () => this.client.ping()).catch(() => undefined), HEALTH_CHECK_INTERVAL_MS);
    this.healthCheck.unref();
  }

  get reachable(): boolean {
    return this.up;
  }

  private markReachable(up: boolean, reason: string): void {
    if (up === this.up) return;
    this.up = up;
    if (up) console.warn('[responses] the responses store (redis) is reachable again');
    else console.warn(`[responses] the responses store (redis) is unreachable (${reason}): stored-response requests get 503 until it returns`);
  }

  /** Connects (fails when Redis cannot be reached, so a misconfigured server does not start). */
  static async connect(options: RedisStoreOptions): Promise<RedisResponsesStore> {
    let lastError: Error | null = null;
    let connected = false;
    const client = newClient(options.url, options.timeoutMs, () => connected);
    // Without a listener an 'error' event would crash the process; reconnects are automatic.
    client.on('error', (err: Error) => {
      lastError = err;
    });
    try {
      await client.connect();
      connected = true;
    } catch (err) {
      client.destroy();
      throw new ResponsesStoreError(`Cannot connect to the responses store at ${redactUrls(options.url)}: ${redactUrls((lastError ?? (err as Error)).message)}`);
    }
    return new RedisResponsesStore(client, options.ttlSeconds * 1000, options.timeoutMs, options.keyPrefix);
  }

  private key(id: string): string {
    return this.prefix + id;
  }

  private async run<T>(what: string, command: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await this.withinTimeout(command());
    } catch (err) {
      const message = (err as Error).message;
      if (err instanceof ErrorReply && !TRANSIENT_REPLY.test(message)) {
        this.markReachable(true, '');
        throw new ResponsesStoreError(`Responses store (redis) failed to ${what}: ${message}`);
      }
      this.markReachable(false, message);
      throw new StoreUnavailableError(`The responses store is unavailable (failed to ${what}: ${message}); retry later.`);
    }
    this.markReachable(true, '');
    return result;
  }

  // node-redis times out only commands still queued, not those written to a server that stalls
  // (SIGSTOP, a hung host); a late reply is then read and dropped.
  private withinTimeout<T>(command: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    return Promise.race([command, timeout]).finally(() => clearTimeout(timer));
  }

  async get(id: string): Promise<StoredRecord | null> {
    const fields = await this.run('read', () => this.client.hmGet(this.key(id), ['status', 'record']));
    const [status, json] = fields;
    if (status == null || json == null) return null;
    return { id, status, data: JSON.parse(json), bytes: json.length };
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
    clearInterval(this.healthCheck);
    if (this.subscriber?.isOpen) await this.subscriber.close();
    if (this.client.isOpen) await this.client.close();
  }
}
