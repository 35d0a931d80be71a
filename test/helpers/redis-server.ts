// Starts a real, throw-away redis-server (Debian's package; .ci/run installs it) on a free port,
// without persistence. Tests that need it are gated with needs(), so they are listed as skipped
// when the binary is missing:
//
//   needs(REDIS_SERVER).describe('…', () => {
//   let redis: TestRedis;
//   beforeAll(async () => { redis = await startRedis(); });
//   afterAll(() => redis?.stop());

import { ChildProcess, spawn } from 'node:child_process';
import { freePort } from './free-port';

export interface TestRedis {
  url: string;
  port: number;
  /** Sends a signal (SIGSTOP / SIGCONT to pause and resume it). */
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL, as a crash: resolves once it is gone. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** Debian's redis-server binary. */
export const REDIS_SERVER = '/usr/bin/redis-server';

/**
 * Starts redis-server on 127.0.0.1 (on `port`, e.g. to restart one, else a free one) and resolves
 * once it accepts connections; `password` turns on requirepass (the URL then carries it).
 */
export async function startRedis(port?: number, password?: string): Promise<TestRedis> {
  port ??= await freePort();
  const child: ChildProcess = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', ...(password ? ['--requirepass', password] : [])],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start within 20 s:\n${output}`)), 20_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (/Ready to accept connections/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited before it was ready:\n${output}`));
    });
  });
  return {
    url: `redis://${password ? `default:${password}@` : ''}127.0.0.1:${port}/0`,
    port,
    signal(signal) {
      child.kill(signal);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
