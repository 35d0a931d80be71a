// Shared by the completions / chat / tokenize e2e files: one real server per file (stories260K
// with a small ChatML-like template), an `openai` client on it, raw POST and metrics helpers.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { SERVER_START_TIMEOUT_MS, defaultTestModel, startServer, type StartServerOptions, type TestServer } from '../helpers/server';
import { waitFor } from '../helpers/wait';

/** A small ChatML-like template that also prints documents and a `greeting` template kwarg. */
export const CHAT_TEMPLATE_SOURCE = [
  "{%- for message in messages -%}<|{{ message['role'] }}|>{{ message['content'] }}\n{% endfor -%}",
  "{%- if documents -%}<|documents|>{% for d in documents %}{{ d['title'] }}: {{ d['text'] }} {% endfor %}\n{% endif -%}",
  '{%- if greeting is defined -%}{{ greeting }}\n{% endif -%}',
  '{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}',
].join('');

function writeChatTemplate(source: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ortllm-chat-')), 'chatml.jinja');
  writeFileSync(path, source);
  return path;
}
export { SERVER_START_TIMEOUT_MS, defaultTestModel };

export interface Serving {
  server: TestServer;
  client: OpenAI;
  /** Served model name (the model path, as no --served-model-name is given). */
  model: string;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<JsonReply>;
  /** Sum of a metric's samples whose labels contain `labelMatch` (0 when there is none). */
  metric(name: string, labelMatch?: string): Promise<number>;
  /** Streams a request, drops the connection after the first chunks and waits for the engine to abort it. */
  expectDisconnectAborts(path: string, body: Record<string, unknown>): Promise<void>;
}

export interface JsonReply {
  status: number;
  json: any;
  text: string;
  headers: Headers;
}

/** POSTs JSON to any server; `json` is null for SSE or empty bodies. */
export async function postJson(baseUrl: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonReply> {
  const res = await fetch(`${baseUrl}${path}`, {
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
}

/** The real server (stories260K unless `options.model`) with `templateSource` as its --chat-template. */
export async function startServing(args: string[] = [], options: StartServerOptions = {}, templateSource = CHAT_TEMPLATE_SOURCE): Promise<Serving> {
  const server = await startServer(['--chat-template', writeChatTemplate(templateSource), ...args], options);
  const client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  const models = await client.models.list();
  const post: Serving['post'] = (path, body, headers) => postJson(server.baseUrl, path, body, headers);
  const metric = async (name: string, labelMatch = ''): Promise<number> => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(labelMatch))
      .reduce((sum, l) => sum + Number(l.trim().split(/\s+/).pop()), 0);
  };
  const expectDisconnectAborts = async (path: string, body: Record<string, unknown>): Promise<void> => {
    const aborted = () => metric('vllm:request_success_total', 'finished_reason="abort"');
    const before = await aborted();
    const controller = new AbortController();
    const res = await fetch(`${server.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    controller.abort();
    await waitFor(async () => (await aborted()) === before + 1);
    expect(await metric('vllm:num_requests_running')).toBe(0);
  };
  return { server, client, model: models.data[0].id, post, metric, expectDisconnectAborts };
}

/** Awaits a request expected to fail and checks vLLM's envelope fields. */
export async function expectApiError(
  call: Promise<unknown>,
  status: number,
  param: string | null,
  type = status === 404 ? 'NotFoundError' : 'BadRequestError',
): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof APIError)) throw err;
    expect({ status: err.status, param: err.param ?? null, type: err.type }).toEqual({ status, param, type });
    expect((err.error as { code?: unknown }).code).toBe(status);
    return err;
  }
  throw new Error('expected the request to fail');
}

/**
 * The JSON frames of either kind of stream: vLLM's `data:` frames ending with [DONE], or typed
 * frames (the Responses API: an `event:` line naming the frame's `type`, no [DONE]).
 */
export function anySseFrames(text: string): any[] {
  const blocks = text.split('\n\n').filter((block) => block.trim() !== '');
  if (!blocks[0]?.startsWith('event: ')) return sseFrames(text);
  return blocks.map((block) => {
    const [event, data] = block.split('\n');
    const frame = JSON.parse(data.slice('data: '.length));
    expect(event).toBe(`event: ${frame.type}`);
    return frame;
  });
}

/** Parses an SSE body into its JSON frames (the final [DONE] is checked and dropped). */
export function sseFrames(text: string): any[] {
  const frames = text.split('\n\n').filter((f) => f.startsWith('data: ')).map((f) => f.slice(6));
  expect(frames[frames.length - 1]).toBe('[DONE]');
  return frames.slice(0, -1).map((f) => JSON.parse(f));
}
