// Starting and stopping the servers a benchmark measures, and reading their peak memory.
// ortllm (and the @fugood/llama.node wrapper) print one line with their base URL when ready;
// llama-server is polled on /health.

import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface RunningServer {
  baseUrl: string;
  /** The server's process id (for its CPU time and peak memory). */
  pid: number;
  stop(): Promise<void>;
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', () => done());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
    });
}

export function startServer(command: string, args: string[], cwd: string, label: string, timeoutMs = 600_000, env: NodeJS.ProcessEnv = process.env): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} did not become ready in ${timeoutMs} ms:\n${log.slice(-3000)}`));
    }, timeoutMs);
    const onData = (buf: Buffer) => {
      log += buf.toString();
      const match = /(https?:\/\/[^\s]+:\d+)/.exec(log);
      if (match && /ready|at http/i.test(log)) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        // Keep draining so a chatty server never blocks on a full pipe.
        child.stdout?.resume();
        child.stderr?.resume();
        resolve({ baseUrl: match[1].replace(/\/$/, ''), pid: child.pid!, stop: stopper(child) });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with code ${code} before it was ready:\n${log.slice(-3000)}`));
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a server that says nothing parseable when ready (llama-server): waits for GET `health` to
 * answer 200. `onOutput` sees everything it prints, for benchmarks that read timings from its log.
 */
export async function startPolled(
  command: string,
  args: string[],
  port: number,
  label: string,
  health = '/health',
  timeoutMs = 600_000,
  onOutput?: (text: string) => void,
): Promise<RunningServer> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (buf: Buffer) => {
    log = (log + buf.toString()).slice(-6000);
    onOutput?.(buf.toString());
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${label} exited with code ${child.exitCode} before it was ready:\n${log.slice(-3000)}`);
    try {
      const res = await fetch(baseUrl + health);
      if (res.ok) return { baseUrl, pid: child.pid!, stop: stopper(child) };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill('SIGKILL');
  throw new Error(`${label} did not become ready in ${timeoutMs} ms:\n${log.slice(-3000)}`);
}

/** Peak resident set (VmHWM) of a live process, in MiB; NaN where /proc cannot tell. */
export function peakRssMiB(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}
