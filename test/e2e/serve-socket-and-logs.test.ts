// Serve flags that change how the server listens and logs: --uds (a Unix domain socket instead
// of host:port), --enable-log-requests with --max-log-len, --disable-access-log-for-endpoints.

import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs } from '../helpers/needs';
import { defaultTestModel, ensureBuilt, REPO_ROOT, SERVER_START_TIMEOUT_MS } from '../helpers/server';

const model = defaultTestModel();
const onModel = needs(model);

function overSocket(socketPath: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

onModel.describe('--uds and the log flags', () => {
  const socket = join(mkdtempSync(join(tmpdir(), 'ortllm-uds-')), 'ortllm.sock');
  let output = '';
  let child: ReturnType<typeof spawn>;

  beforeAll(async () => {
    await ensureBuilt();
    child = spawn(process.execPath, [join(REPO_ROOT, 'dist/src/main.js'), 'serve', model, '--uds', socket, '--enable-log-requests', '--max-log-len', '12',
      '--disable-access-log-for-endpoints', '/health,/metrics'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready line:\n${output}`)), SERVER_START_TIMEOUT_MS - 10_000);
      const onData = (c: Buffer) => {
        output += c.toString();
        if (output.includes(`at unix:${socket}`)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
    });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => child?.kill('SIGTERM'));

  it('serves over the socket, logs request bodies cut at --max-log-len and leaves excluded paths out of the access log', async () => {
    expect((await overSocket(socket, 'GET', '/health')).status).toBe(200);
    const r = await overSocket(socket, 'POST', '/v1/completions', { prompt: 'Once upon a time', max_tokens: 2 });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).object).toBe('text_completion');
    await new Promise((res) => setTimeout(res, 200));
    expect(output).toMatch(/Received request \S+: POST \/v1\/completions \{"prompt":"O…/);
    expect(output).toMatch(/"POST \/v1\/completions HTTP\/1\.1" 200/);
    expect(output).not.toMatch(/"GET \/health HTTP/);
  });
});
