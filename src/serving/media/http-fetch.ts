// http(s) media downloads: only from --allowed-media-domains (every redirect hop too), within
// VLLM_IMAGE_FETCH_TIMEOUT and --max-image-filesize-mb. Errors follow vLLM's media connector: a
// refused URL is a 400, a 4xx answer or an oversized body a 422, anything transient a 500.

import { RequestValidationError } from '../../engine/errors';
import { OpenAIHttpError } from '../openai-error';

export interface HttpFetchPolicy {
  allowedDomains: readonly string[];
  timeoutMs: number;
  allowRedirects: boolean;
  maxBytes: number;
}

/** Hops a download may take (the first request and its redirects), as requests' default. */
const MAX_HOPS = 30;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

function unprocessable(message: string, param: string): OpenAIHttpError {
  return new OpenAIHttpError(422, `Failed to fetch media from URL: ${message}`, param);
}

/** Python's repr of a list of strings, as vLLM's message prints the allowed domains. */
const pythonList = (items: readonly string[]): string => `[${items.map((d) => `'${d}'`).join(', ')}]`;

function checkHop(url: URL, policy: HttpFetchPolicy, param: string): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RequestValidationError(`The media URL must remain HTTP(S): ${JSON.stringify(url.href.slice(0, 32))}`, param);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!policy.allowedDomains.includes(host)) {
    throw new RequestValidationError(
      `The URL must be from one of the allowed domains: ${pythonList(policy.allowedDomains)}. Input URL domain: ${host}`,
      param,
    );
  }
}

async function readCapped(response: Response, maxBytes: number, param: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) throw unprocessable(`the media is ${declared} bytes, more than the ${maxBytes} allowed`, param);
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (!response.body) return new Uint8Array(0);
  // Leaving the loop early cancels the stream, so an oversized body is not read to its end.
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > maxBytes) throw unprocessable(`the media is more than the ${maxBytes} bytes allowed`, param);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

async function fetchHops(start: URL, policy: HttpFetchPolicy, signal: AbortSignal, param: string): Promise<Uint8Array> {
  let url = start;
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    checkHop(url, policy, param);
    const response = await fetch(url, { redirect: 'manual', signal });
    const location = response.headers.get('location');
    if (REDIRECT_STATUSES.has(response.status) && location !== null) {
      await response.body?.cancel();
      if (!policy.allowRedirects) throw unprocessable(`HTTP ${response.status} redirect (VLLM_MEDIA_URL_ALLOW_REDIRECTS=0)`, param);
      url = new URL(location, url);
      continue;
    }
    if (response.status >= 400) {
      await response.body?.cancel();
      const transient = response.status >= 500 || response.status === 408 || response.status === 429;
      if (transient) throw new OpenAIHttpError(500, `Failed to fetch media from URL: HTTP ${response.status} error`);
      throw unprocessable(`HTTP ${response.status} error`, param);
    }
    return readCapped(response, policy.maxBytes, param);
  }
  throw unprocessable(`more than ${MAX_HOPS - 1} redirects`, param);
}

/** Downloads an http(s) media URL under `policy`. */
export async function fetchMediaBytes(url: URL, policy: HttpFetchPolicy, param: string): Promise<Uint8Array> {
  const signal = AbortSignal.timeout(policy.timeoutMs);
  try {
    return await fetchHops(url, policy, signal, param);
  } catch (err) {
    if (err instanceof RequestValidationError || err instanceof OpenAIHttpError) throw err;
    if (signal.aborted) throw new OpenAIHttpError(500, `Failed to fetch media from URL: no answer within ${policy.timeoutMs / 1000} s (VLLM_IMAGE_FETCH_TIMEOUT)`);
    throw new OpenAIHttpError(500, `Failed to fetch media from URL: ${(err as Error).message}`);
  }
}
