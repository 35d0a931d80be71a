// A small prefill/decode router for tests, playing vLLM's toy proxy / llm-d's routing sidecar:
// each completion or chat request goes first to the prefill replica as a one-token, non-streaming
// request with do_remote_decode, then to the decode replica with the kv_transfer_params the
// prefill returned; the decode replica's answer (streaming or not) goes back to the client.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';

export interface PdProxy {
  baseUrl: string;
  /** The kv_transfer_params of the last prefill response. */
  lastParams: Record<string, unknown> | null;
  /** Per request, ms from the client's request to the prefill's answer, and from there to the decode replica's first bytes. */
  timings: { prefillMs: number[]; decodeFirstBytesMs: number[] };
  close(): Promise<void>;
}

export interface PdProxyOptions {
  prefillUrl: string;
  decodeUrl: string;
  /** Runs between the prefill's answer and the decode request (a test kills the prefill replica there). */
  beforeDecode?: () => Promise<void>;
}

const PREFILL_PARAMS = { do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null };

export async function startPdProxy(options: PdProxyOptions): Promise<PdProxy> {
  const proxy: PdProxy = { baseUrl: '', lastParams: null, timings: { prefillMs: [], decodeFirstBytesMs: [] }, close: () => Promise.resolve() };
  const server: Server = createServer((req, res) => {
    route(req, res, options, proxy).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `proxy: ${err instanceof Error ? err.message : String(err)}`, type: 'BadGateway', param: null, code: 502 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return proxy;
}

async function route(req: IncomingMessage, res: ServerResponse, options: PdProxyOptions, proxy: PdProxy): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const received = performance.now();
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
  const { stream_options: _dropped, ...rest } = body;
  const prefillBody: Record<string, unknown> = { ...rest, kv_transfer_params: PREFILL_PARAMS, max_tokens: 1, stream: false };
  if ('max_completion_tokens' in body) prefillBody.max_completion_tokens = 1;
  const prefill = await post(`${options.prefillUrl}${req.url}`, prefillBody);
  const prefillJson = (await prefill.json()) as { kv_transfer_params?: Record<string, unknown> | null };
  if (prefill.status !== 200) {
    res.writeHead(prefill.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(prefillJson));
    return;
  }
  proxy.lastParams = prefillJson.kv_transfer_params ?? null;
  const prefilled = performance.now();
  proxy.timings.prefillMs.push(prefilled - received);
  await options.beforeDecode?.();
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const decode = await post(`${options.decodeUrl}${req.url}`, { ...body, kv_transfer_params: proxy.lastParams }, abort.signal);
  res.writeHead(decode.status, { 'content-type': decode.headers.get('content-type') ?? 'application/json' });
  if (!decode.body) {
    res.end();
    return;
  }
  const stream = Readable.fromWeb(decode.body);
  stream.once('data', () => proxy.timings.decodeFirstBytesMs.push(performance.now() - prefilled));
  stream.on('error', () => res.destroy()).pipe(res);
}

function post(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
}
