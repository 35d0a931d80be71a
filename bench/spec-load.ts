// The speculative decoding benchmark's client: greedy completions of token-id prompts (so both
// servers see the very same ids, whatever their tokenizers make of the filler pieces), N streams
// at a time, and the servers' speculative counters read from /metrics around each point.

export interface LoadPoint {
  concurrency: number;
  requests: number;
  outputTokens: number;
  seconds: number;
  /** Output tokens / wall time of the whole point (vLLM's output_throughput). */
  tokS: number;
  /** Per request, output tokens after the first / (end - first token): the decode rate without the prefill. */
  decodeTokS: number;
  ttftMs: number;
  spec: SpecCounters | null;
}

export interface SpecCounters {
  drafts: number;
  draftTokens: number;
  acceptedTokens: number;
}

/** Sampling fields of a workload's requests; each request also gets `seed` = its index. Absent: greedy. */
export interface Sampling {
  temperature: number;
  top_p: number;
  top_k: number;
  min_p: number;
}

/** One streamed completion; resolves to its output token count and timings. */
async function complete(baseUrl: string, prompt: number[], maxTokens: number, sampling: Record<string, number>): Promise<{ tokens: number; ttft: number; end: number; start: number }> {
  const start = performance.now();
  const res = await fetch(`${baseUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: maxTokens, temperature: 0, ...sampling, ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
  });
  if (!res.ok || !res.body) throw new Error(`completion failed: HTTP ${res.status} ${await res.text()}`);
  let ttft = 0;
  let tokens = 0;
  let buffered = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line.startsWith('data:') || line === 'data: [DONE]') continue;
      const event = JSON.parse(line.slice(5)) as { choices?: Array<{ text?: string }>; usage?: { completion_tokens?: number } | null };
      if (!ttft && event.choices?.some((c) => c.text)) ttft = performance.now() - start;
      if (event.usage?.completion_tokens) tokens = event.usage.completion_tokens;
    }
  }
  if (tokens !== maxTokens) throw new Error(`expected ${maxTokens} output tokens (ignore_eos), the server reported ${tokens}`);
  return { tokens, ttft, end: performance.now(), start };
}

/** `requests` completions of prompts taken in turn from `prompts`, `concurrency` in flight at a time. */
export async function loadPoint(baseUrl: string, prompts: number[][], maxTokens: number, concurrency: number, requests: number, metrics: MetricsReader | null, sampling?: Sampling): Promise<LoadPoint> {
  const before = metrics ? await metrics(baseUrl) : null;
  let next = 0;
  const done: Array<Awaited<ReturnType<typeof complete>>> = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        done.push(await complete(baseUrl, prompts[i % prompts.length], maxTokens, sampling ? { ...sampling, seed: i } : {}));
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const after = metrics ? await metrics(baseUrl) : null;
  const outputTokens = done.reduce((n, d) => n + d.tokens, 0);
  const decodeRates = done.map((d) => (d.tokens - 1) / ((d.end - d.start - d.ttft) / 1000));
  return {
    concurrency,
    requests,
    outputTokens,
    seconds,
    tokS: outputTokens / seconds,
    decodeTokS: (concurrency * decodeRates.reduce((a, b) => a + b, 0)) / decodeRates.length,
    ttftMs: median(done.map((d) => d.ttft)),
    spec: before && after ? { drafts: after.drafts - before.drafts, draftTokens: after.draftTokens - before.draftTokens, acceptedTokens: after.acceptedTokens - before.acceptedTokens } : null,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

export type MetricsReader = (baseUrl: string) => Promise<SpecCounters>;

/** Sums every sample of `name` (over its labels) in a Prometheus text page; 0 when absent. */
function counter(page: string, name: string): number {
  let sum = 0;
  for (const line of page.split('\n')) {
    if (line.startsWith(name) && (line[name.length] === ' ' || line[name.length] === '{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

function prometheusReader(prefix: string): MetricsReader {
  return async (baseUrl) => {
    const page = await (await fetch(`${baseUrl}/metrics`)).text();
    return {
      drafts: counter(page, `${prefix}spec_decode_num_drafts_total`),
      draftTokens: counter(page, `${prefix}spec_decode_num_draft_tokens_total`),
      acceptedTokens: counter(page, `${prefix}spec_decode_num_accepted_tokens_total`),
    };
  };
}

/** ortllm's vLLM counters. */
export const vllmSpecMetrics = prometheusReader('vllm:');
/** llama-server's (with --metrics): the same three counters under its own prefix. */
export const llamaSpecMetrics = prometheusReader('llamacpp:');

/** The greedy continuation of `prompt` as token ids (a vLLM-compatible server with return_token_ids). */
export async function greedyContinuation(baseUrl: string, prompt: number[], maxTokens: number): Promise<number[]> {
  const res = await fetch(`${baseUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, return_token_ids: true }),
  });
  if (!res.ok) throw new Error(`continuation failed: HTTP ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { choices: Array<{ token_ids?: number[] | null }> };
  const ids = body.choices[0].token_ids;
  if (!ids) throw new Error('the server returned no token_ids');
  return ids;
}
