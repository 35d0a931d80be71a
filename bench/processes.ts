// Starting and stopping the servers a benchmark measures: each prints one line with its base
// URL when ready (ortllm's `… at http://HOST:PORT`, the peer's likewise).

import { ChildProcess, spawn } from 'node:child_process';

export interface RunningServer {
  baseUrl: string;
  /** The server's process id (for its CPU time). */
  pid: number;
  stop(): Promise<void>;
}

export function startServer(command: string, args: string[], cwd: string, label: string, timeoutMs = 180_000): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
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
        resolve({
          baseUrl: match[1].replace(/\/$/, ''),
          pid: child.pid!,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
            }),
        });
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
