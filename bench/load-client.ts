// The client side of `npm run bench`, modelled on `vllm bench serve`: streaming
// /v1/completions requests at a fixed concurrency, timed on the client. Both servers under
// test (ortllm and the llama.cpp peer) are measured by this same code.

export interface LoadOptions {
  baseUrl: string;
  model?: string;
  apiKey?: string;
  prompts: string[];
  maxTokens: number;
  concurrency: number;
  numRequests: number;
}

/** The fields of a streamed /v1/completions chunk the timing reads. */
interface StreamChunk {
  error?: { message?: string };
  usage?: { completion_tokens?: number | null } | null;
  choices?: { text?: string }[];
}

interface RequestTiming {
  ok: boolean;
  error?: string;
  ttft: number; // seconds
  e2e: number;
  itls: number[];
  outputTokens: number;
}

export interface Percentiles {
  mean: number;
  median: number;
  p99: number;
}

export interface LoadSummary {
  concurrency: number;
  completed: number;
  failed: number;
  durationS: number;
  requestThroughput: number; // req/s
  outputThroughput: number; // tok/s
  ttftMs: Percentiles;
  tpotMs: Percentiles;
  itlMs: Percentiles;
  e2eMs: Percentiles;
}

function percentiles(values: number[], scale = 1000): Percentiles {
  if (values.length === 0) return { mean: NaN, median: NaN, p99: NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length;
  return { mean: mean * scale, median: at(0.5) * scale, p99: at(0.99) * scale };
}

/** One streaming request; every SSE chunk carrying text counts as one output token. */
async function timedRequest(opts: LoadOptions, prompt: string): Promise<RequestTiming> {
  const start = performance.now();
  const itls: number[] = [];
  let ttft = 0;
  let last = start;
  let outputTokens = 0;
  let usageTokens: number | null = null;
  try {
    const res = await fetch(`${opts.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
      },
      body: JSON.stringify({
        model: opts.model,
        prompt,
        max_tokens: opts.maxTokens,
        temperature: 0,
        ignore_eos: true,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(piece, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, cut).trim();
        buffer = buffer.slice(cut + 2);
        if (!frame.startsWith('data:')) continue;
        const data = frame.slice(5).trim();
        if (data === '[DONE]') continue;
        const chunk = JSON.parse(data) as StreamChunk;
        if (chunk.error) throw new Error(chunk.error.message);
        if (chunk.usage?.completion_tokens != null) usageTokens = chunk.usage.completion_tokens;
        if (chunk.choices?.[0]?.text) {
          const now = performance.now();
          if (outputTokens === 0) ttft = (now - start) / 1000;
          else itls.push((now - last) / 1000);
          last = now;
          outputTokens++;
        }
      }
    }
    const e2e = (performance.now() - start) / 1000;
    return { ok: true, ttft, e2e, itls, outputTokens: usageTokens ?? outputTokens };
  } catch (err) {
    return { ok: false, error: (err as Error).message, ttft: 0, e2e: 0, itls: [], outputTokens: 0 };
  }
}

export async function runLoad(opts: LoadOptions): Promise<LoadSummary> {
  const results: RequestTiming[] = [];
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < opts.numRequests) {
      const i = next++;
      results.push(await timedRequest(opts, opts.prompts[i % opts.prompts.length]));
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const durationS = (performance.now() - start) / 1000;
  const ok = results.filter((r) => r.ok);
  const outputTokens = ok.reduce((s, r) => s + r.outputTokens, 0);
  const failures = results.filter((r) => !r.ok);
  if (failures.length) console.warn(`  ${failures.length} failed, first: ${failures[0].error}`);
  return {
    concurrency: opts.concurrency,
    completed: ok.length,
    failed: failures.length,
    durationS,
    requestThroughput: ok.length / durationS,
    outputThroughput: outputTokens / durationS,
    ttftMs: percentiles(ok.map((r) => r.ttft)),
    tpotMs: percentiles(ok.filter((r) => r.outputTokens > 1).map((r) => (r.e2e - r.ttft) / (r.outputTokens - 1))),
    itlMs: percentiles(ok.flatMap((r) => r.itls)),
    e2eMs: percentiles(ok.map((r) => r.e2e)),
  };
}
