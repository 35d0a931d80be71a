// A real redis-server and a real server keeping its stored responses there, with a /health probe:
// the setup of the tests that break Redis or look at what the server prints about it.

import type { StartServerOptions } from '../helpers/server';
import { HealthProbe } from '../helpers/health-probe';
import { startRedis, type TestRedis } from '../helpers/redis-server';
import { startServing, type Serving } from './completions-helpers';

export interface RedisServing {
  /** Replaced when a test restarts Redis. */
  redis: TestRedis;
  s: Serving;
  probe: HealthProbe;
}

/** Starts Redis (with `password` when given), then the server with `--responses-store <its URL>` and `args`. */
export async function startRedisServing(args: string[], options: StartServerOptions = {}, password?: string): Promise<RedisServing> {
  const redis = await startRedis(undefined, password);
  const s = await startServing(['--responses-store', redis.url, ...args], options);
  return { redis, s, probe: new HealthProbe(s.server.baseUrl) };
}

export async function stopRedisServing(setup: RedisServing | undefined): Promise<void> {
  setup?.probe.close();
  await setup?.s.server.stop();
  await setup?.redis.stop();
}
