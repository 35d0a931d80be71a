// Shared by the completions / chat / tokenize e2e files: one real server per file (stories260K
// with a small ChatML-like template), an `openai` client on it, raw POST and metrics helpers.

import { join } from 'node:path';
import OpenAI from 'openai';
import { REPO_ROOT, SERVER_START_TIMEOUT_MS, defaultTestModel, startServer, type TestServer } from '../helpers/server';

export const CHAT_TEMPLATE = join(REPO_ROOT, 'test/fixtures/chatml-template.jinja');
export const HAVE_MODEL = defaultTestModel() !== null;
export { SERVER_START_TIMEOUT_MS };

export interface Serving {
  server: TestServer;
  client: OpenAI;
  /** Served model name (the model path, as no --served-model-name is given). */
  model: string;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; json: any; text: string; headers: Headers }>;
  metric(name: string): Promise<number>;
}

export async function startServing(args: string[] = []): Promise<Serving> {
  const server = await startServer(['--chat-template', CHAT_TEMPLATE, ...args]);
  const client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  const models = await client.models.list();
  const post: Serving['post'] = async (path, body, headers = {}) => {
    const res = await fetch(`${server.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {
      /* SSE or empty */
    }
    return { status: res.status, json, text, headers: res.headers };
  };
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    if (!line) throw new Error(`metric ${name} not found`);
    return Number(line.trim().split(/\s+/).pop());
  };
  return { server, client, model: models.data[0].id, post, metric };
}

/** Awaits a request expected to fail and checks vLLM's envelope fields. */
export async function expectApiError(
  call: Promise<unknown>,
  status: number,
  param: string | null,
  type = status === 404 ? 'NotFoundError' : 'BadRequestError',
): Promise<OpenAI.APIError> {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof OpenAI.APIError)) throw err;
    expect({ status: err.status, param: err.param ?? null, type: err.type }).toEqual({ status, param, type });
    expect((err.error as { code?: unknown }).code).toBe(status);
    return err;
  }
  throw new Error('expected the request to fail');
}

/** Parses an SSE body into its JSON frames (the final [DONE] is checked and dropped). */
export function sseFrames(text: string): any[] {
  const frames = text.split('\n\n').filter((f) => f.startsWith('data: ')).map((f) => f.slice(6));
  expect(frames[frames.length - 1]).toBe('[DONE]');
  return frames.slice(0, -1).map((f) => JSON.parse(f));
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('condition not reached in time');
}
