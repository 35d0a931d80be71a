// The requests `npm run bench:vision` times, the same on ortllm and llama-server: a chat request
// with one image and ~100 text tokens (streamed: time to the first content chunk), a completion of
// the same number of text-only prompt ids (the text baseline), and N image requests at once.
import sharp from 'sharp';
import { randomImage } from '../test/unit/model/vision/random-image';
import { SHORT_PROMPTS } from './serve-points';

/** ~100 stories260K tokens after the image. */
export const IMAGE_PROMPT_TEXT = SHORT_PROMPTS.join(' ');

/** A seeded noise image as a PNG data URL (every seed its own pixels, so no cache serves it twice). */
export async function imageDataUrl(side: number, seed: number): Promise<string> {
  const image = randomImage(side, side, seed);
  const png = await sharp(Buffer.from(image.data), { raw: { width: side, height: side, channels: 3 } }).png().toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

export interface Target {
  baseUrl: string;
  /** Fields only this server takes (llama-server: cache_prompt false). */
  extra: Record<string, unknown>;
  /** Where a prompt of token ids goes (llama-server's /v1/completions takes text only; its /completion takes ids). */
  idsPath: '/v1/completions' | '/completion';
}

/** A streamed completion of prompt ids with at most `maxTokens` tokens, for `target`'s ids route. */
export function idsCompletion(target: Target, ids: number[], maxTokens: number): Record<string, unknown> {
  if (target.idsPath === '/completion') return { prompt: ids, n_predict: maxTokens, temperature: 0 };
  return { model: 'bench', prompt: ids, max_tokens: maxTokens, temperature: 0 };
}

export function imageChat(url: string, maxTokens: number, stream: boolean): Record<string, unknown> {
  const content = [
    { type: 'image_url', image_url: { url } },
    { type: 'text', text: IMAGE_PROMPT_TEXT },
  ];
  return { model: 'bench', messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream };
}

/** `count` seeded prompt ids from the stories vocabulary (3..511), other ids for every seed. */
export function textIds(count: number, seed: number): number[] {
  let s = seed >>> 0;
  return Array.from({ length: count }, () => 3 + ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) % 509));
}

async function post(target: Target, path: string, body: Record<string, unknown>): Promise<Response> {
  const res = await fetch(target.baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, ...target.extra }) });
  if (!res.ok) throw new Error(`${target.baseUrl}${path}: HTTP ${res.status}: ${(await res.text()).slice(0, 500)}`);
  return res;
}

/** A non-streamed chat request: its usage. */
export async function chatUsage(target: Target, body: Record<string, unknown>): Promise<{ prompt_tokens: number; completion_tokens: number }> {
  const r = (await (await post(target, '/v1/chat/completions', { ...body, stream: false })).json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
  return r.usage;
}

/** Milliseconds from sending a streamed request to its first chunk that carries generated text (else to its end). */
export async function timeToFirstContent(target: Target, path: string, body: Record<string, unknown>): Promise<number> {
  const start = performance.now();
  const res = await post(target, path, { ...body, stream: true });
  const decoder = new TextDecoder();
  let buffered = '';
  let first = NaN;
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(bytes, { stream: true });
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      if (!Number.isNaN(first) || !line.startsWith('data: ') || line === 'data: [DONE]') continue;
      // OpenAI chunks carry choices; llama-server's /completion chunks carry content.
      const chunk = JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string }; text?: string }>; content?: string };
      const choice = chunk.choices?.[0];
      if (choice?.delta?.content || choice?.text || chunk.content) first = performance.now() - start;
    }
  }
  return Number.isNaN(first) ? performance.now() - start : first;
}

export interface Burst {
  seconds: number;
  requests: number;
  completionTokens: number;
}

/** `urls.length` image chat requests sent at once: the wall time until the last answers, and the tokens generated. */
export async function imageBurst(target: Target, urls: string[], maxTokens: number): Promise<Burst> {
  const start = performance.now();
  const usages = await Promise.all(urls.map((url) => chatUsage(target, imageChat(url, maxTokens, false))));
  return { seconds: (performance.now() - start) / 1000, requests: urls.length, completionTokens: usages.reduce((n, u) => n + u.completion_tokens, 0) };
}
