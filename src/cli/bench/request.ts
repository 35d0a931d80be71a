// One streamed request of `bench serve`, timed on the client as vLLM's request functions do:
// TTFT at the first chunk carrying text, one inter-token latency per later text chunk, output
// tokens from the final usage (or the chunk count when the server sends none).
//
// The request goes out on node:http(s) over keep-alive connections, not fetch: the load generator
// shares the machine's cores with the server it measures, and fetch's web streams cost it about
// twice the CPU per streamed token (docs/perf/http-overhead.md).

import * as http from 'node:http';
import * as https from 'node:https';

export interface BenchRequestInput {
  url: string;
  chat: boolean;
  model: string;
  prompt: string;
  maxTokens: number;
  headers: Record<string, string>;
  /** Sampling fields sent as given (temperature, top_p, top_k, ignore_eos). */
  extra: Record<string, unknown>;
}

export interface BenchRequestOutput {
  success: boolean;
  error: string;
  /** Seconds. */
  ttft: number;
  latency: number;
  itl: number[];
  /** performance.now() at send, in seconds. */
  startTime: number;
  promptLen: number | null;
  outputTokens: number;
  generatedText: string;
}

/** The parts of a completion / chat chunk the timing reads. */
interface StreamChunk {
  error?: { message?: string };
  usage?: { completion_tokens?: number | null; prompt_tokens?: number | null } | null;
  choices?: Array<{ text?: string | null; delta?: { content?: string | null } }>;
}

const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

/**
 * POSTs `body` and resolves with the response once its headers arrived (the body is read by the
 * caller). A kept-alive socket the server closed while it sat idle in the pool (llama.cpp's server
 * closes it after a streamed response) fails before any response arrives: that send is repeated,
 * as node's documentation advises, and `onSend` marks the new start. After a burst of concurrent
 * requests the pool can hold many such sockets and a repeat may draw another one, so it repeats
 * for as long as the failure was on a reused socket (each failure takes one dead socket out of the
 * pool); a failure on a fresh socket is the server's answer.
 */
function post(url: string, headers: Record<string, string>, body: string, onSend: () => void): Promise<http.IncomingMessage> {
  const target = new URL(url);
  const protocol = target.protocol === 'https:' ? 'https:' : 'http:';
  const send = protocol === 'https:' ? https.request : http.request;
  const attempt = (): Promise<http.IncomingMessage> =>
    new Promise((resolve, reject) => {
      onSend();
      const req = send(target, { method: 'POST', agent: agents[protocol], headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, resolve);
      req.on('error', (err: NodeJS.ErrnoException) => {
        const stale = req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
        if (stale) attempt().then(resolve, reject);
        else reject(err);
      });
      req.end(body);
    });
  return attempt();
}

export async function sendBenchRequest(input: BenchRequestInput): Promise<BenchRequestOutput> {
  const body = input.chat
    ? { model: input.model, messages: [{ role: 'user', content: input.prompt }], max_completion_tokens: input.maxTokens }
    : { model: input.model, prompt: input.prompt, max_tokens: input.maxTokens };
  let start = performance.now();
  const out: BenchRequestOutput = { success: false, error: '', ttft: 0, latency: 0, itl: [], startTime: start / 1000, promptLen: null, outputTokens: 0, generatedText: '' };
  const markSend = (): void => {
    start = performance.now();
    out.startTime = start / 1000;
  };
  /** When the previous text chunk arrived (read only from the second one on). */
  let last = 0;
  let chunks = 0;
  try {
    const res = await post(
      input.url,
      { 'content-type': 'application/json', ...input.headers },
      JSON.stringify({ ...body, ...input.extra, stream: true, stream_options: { include_usage: true } }),
      markSend,
    );
    res.setEncoding('utf8');
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      let text = '';
      for await (const piece of res as AsyncIterable<string>) text += piece;
      throw new Error(`HTTP ${status}: ${text.slice(0, 500)}`);
    }
    let buffer = '';
    for await (const piece of res as AsyncIterable<string>) {
      buffer += piece;
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, cut).trim();
        buffer = buffer.slice(cut + 2);
        if (!frame.startsWith('data:')) continue;
        const data = frame.slice(5).trim();
        if (data === '[DONE]') continue;
        const chunk = JSON.parse(data) as StreamChunk;
        if (chunk.error) throw new Error(chunk.error.message ?? JSON.stringify(chunk.error));
        if (chunk.usage) {
          if (chunk.usage.completion_tokens != null) out.outputTokens = chunk.usage.completion_tokens;
          if (chunk.usage.prompt_tokens != null) out.promptLen = chunk.usage.prompt_tokens;
        }
        const choice = chunk.choices?.[0];
        const text = (input.chat ? choice?.delta?.content : choice?.text) ?? '';
        if (text) {
          const now = performance.now();
          if (chunks === 0) out.ttft = (now - start) / 1000;
          else out.itl.push((now - last) / 1000);
          last = now;
          chunks++;
          out.generatedText += text;
        }
      }
    }
    if (!res.complete) throw new Error('the response ended before it was complete');
    out.latency = (performance.now() - start) / 1000;
    if (out.outputTokens === 0) out.outputTokens = chunks;
    out.success = true;
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause;
    out.error = cause ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
  }
  return out;
}
