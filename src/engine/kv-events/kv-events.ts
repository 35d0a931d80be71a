// --kv-events-config in the engine core: a recorder on each KV group's manager, and once per step
// the step's events out through the publisher. It runs where the core runs (the engine worker
// thread), so events never cross to the HTTP thread and the sockets close with the core.

import type { EngineKvManager } from '../core/kv-cache-manager';
import { publishesKvEvents, type KvEventsConfig } from './kv-events-config';
import { KvEventRecorder } from './kv-event-recorder';
import { kvEventGroupsOf } from './kv-event-groups';
import { ZmqKvEventPublisher } from './zmq-event-publisher';

export class KvEvents {
  private constructor(
    private readonly recorder: KvEventRecorder,
    private readonly publisher: ZmqKvEventPublisher,
  ) {}

  /**
   * Starts publishing `kv`'s cache changes, or returns null when the config publishes nothing.
   * Without prefix caching nothing is ever cached, so nothing is published (vLLM warns too).
   */
  static async start(config: KvEventsConfig | undefined, kv: EngineKvManager): Promise<KvEvents | null> {
    if (config && !config.enableKvCacheEvents && config.publisher !== 'null') {
      console.warn(`[kv-events] KV cache events are disabled, but publisher "${config.publisher}" is configured: set enable_kv_cache_events to true to publish them.`);
    }
    if (!publishesKvEvents(config)) return null;
    if (!kv.enablePrefixCaching) console.warn('[kv-events] KV cache events are on, but prefix caching is not: no block is cached, so none is announced. Use --enable-prefix-caching.');
    const publisher = await ZmqKvEventPublisher.start(config);
    const recorder = new KvEventRecorder();
    kvEventGroupsOf(kv).forEach((pool, groupIdx) => {
      pool.events = recorder.sinkFor({ groupIdx, blockSize: pool.blockSize, window: pool.window });
    });
    const replay = config.replayEndpoint === null ? '' : `, replay on ${config.replayEndpoint}`;
    console.info(`[kv-events] publishing KV cache events on ${config.endpoint}${replay}, topic "${config.topic}"`);
    return new KvEvents(recorder, publisher);
  }

  /** Publishes what changed since the last flush (once per engine step and after each cache reset). */
  flush(): void {
    const batch = this.recorder.take();
    if (batch) this.publisher.publish(batch);
  }

  async close(): Promise<void> {
    this.flush();
    await this.publisher.close();
  }
}
