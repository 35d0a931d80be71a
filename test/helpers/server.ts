// Starts the REAL server (`node dist/src/main.js serve ...`) as a child process on a free port
// and returns its base URL, as users run it. dist/ is rebuilt first when any source is newer
// (tsc emits even when someone else's in-progress file has type errors). Used by every e2e test:
//
//   let server: TestServer;
//   beforeAll(async () => { server = await startServer(['--api-key', 'k']); }, SERVER_START_TIMEOUT_MS);
//   afterAll(() => server?.stop());

import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { sharedModel } from './model-files';

export const REPO_ROOT = resolve(__dirname, '../..');
const MAIN_JS = join(REPO_ROOT, 'dist/src/main.js');
const BUILD_LOCK = join(REPO_ROOT, 'dist/.e2e-build-lock');
const STALE_LOCK_MS = 5 * 60_000;

/** Enough for a rebuild plus model load on 2 cores; pass it to beforeAll. */
export const SERVER_START_TIMEOUT_MS = 240_000;

/** The e2e model (stories260K, tiny and real); gate tests on it with needs(defaultTestModel()). */
export function defaultTestModel(): string {
  return sharedModel('stories260K.gguf');
}

export interface TestServer {
  baseUrl: string;
  port: number;
  child: ChildProcess;
  /** Everything the server printed so far (stdout + stderr). */
  output(): string;
  /** SIGTERM (or `signal`), then waits for exit; resolves to the exit code (null if killed). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartServerOptions {
  /** Model path, or null for none on the command line (the built-in dummy model). Default: stories260K. */
  model?: string | null;
  env?: NodeJS.ProcessEnv;
  /** Kill the process if it has not printed its URL by then. */
  timeoutMs?: number;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Rebuilds dist/ when src/ is newer than dist/src/main.js. Serialized by a lock directory. */
export async function ensureBuilt(): Promise<void> {
  const stale = (): boolean =>
    !existsSync(MAIN_JS) || newestMtime(join(REPO_ROOT, 'src')) > statSync(MAIN_JS).mtimeMs;
  if (!stale()) return;
  mkdirSync(join(REPO_ROOT, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(BUILD_LOCK);
      break;
    } catch {
      // Another test process is building; a lock older than any build is left from a crash.
      const lock = statSync(BUILD_LOCK, { throwIfNoEntry: false });
      if (lock && Date.now() - lock.mtimeMs > STALE_LOCK_MS) rmSync(BUILD_LOCK, { recursive: true, force: true });
      await sleep(500);
      if (!stale()) return;
    }
  }
  try {
    if (!stale()) return;
    const tsc = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: REPO_ROOT, encoding: 'utf8' });
    if (!existsSync(MAIN_JS)) throw new Error(`build failed:\n${result.stdout}${result.stderr}`);
    if (result.status !== 0) console.warn(`tsc reported type errors (dist/ was still emitted):\n${result.stdout.slice(0, 4000)}`);
  } finally {
    rmdirSync(BUILD_LOCK);
  }
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Runs `node dist/src/main.js <args>` to completion (CLI tests: --help, bad flags). */
export async function runCli(args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  await ensureBuilt();
  const result = spawnSync(process.execPath, [MAIN_JS, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Starts `ortllm serve [model] --host 127.0.0.1 --port 0 <args>` and waits for its URL line. */
export async function startServer(args: string[] = [], options: StartServerOptions = {}): Promise<TestServer> {
  await ensureBuilt();
  const model = options.model === undefined ? defaultTestModel() : options.model;
  const argv = [MAIN_JS, 'serve', ...(model ? [model] : []), '--host', '127.0.0.1', '--port', '0', ...args];
  // A VLLM_API_KEY in the developer's shell would silently turn auth on: only tests set it.
  const { VLLM_API_KEY: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, argv, {
    cwd: REPO_ROOT,
    env: { ...inherited, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  const exited = new Promise<number | null>((resolveExit) => {
    child.once('exit', (code) => {
      running.delete(child);
      resolveExit(code);
    });
  });

  const baseUrl = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not print its URL within ${options.timeoutMs ?? SERVER_START_TIMEOUT_MS} ms:\n${output}`));
    }, options.timeoutMs ?? SERVER_START_TIMEOUT_MS);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = / at (https?:\/\/[^\s]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1].replace(/\/$/, ''));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with code ${code} before it was ready:\n${output}`));
    });
  });

  return {
    baseUrl,
    port: Number(new URL(baseUrl).port),
    child,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timeout = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timeout);
      return code;
    },
  };
}
