// One streamed request of `bench serve`, timed on the client as vLLM's request functions do:
// TTFT at the first chunk carrying text, one inter-token latency per later text chunk, output
// tokens from the final usage (or the chunk count when the server sends none).

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

export async function sendBenchRequest(input: BenchRequestInput): Promise<BenchRequestOutput> {
  const body = input.chat
    ? { model: input.model, messages: [{ role: 'user', content: input.prompt }], max_completion_tokens: input.maxTokens }
    : { model: input.model, prompt: input.prompt, max_tokens: input.maxTokens };
  const start = performance.now();
  const out: BenchRequestOutput = { success: false, error: '', ttft: 0, latency: 0, itl: [], startTime: start / 1000, promptLen: null, outputTokens: 0, generatedText: '' };
  let last = start;
  let chunks = 0;
  try {
    const res = await fetch(input.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...input.headers },
      body: JSON.stringify({ ...body, ...input.extra, stream: true, stream_options: { include_usage: true } }),
    });
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 500)}`);
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
    out.latency = (performance.now() - start) / 1000;
    if (out.outputTokens === 0) out.outputTokens = chunks;
    out.success = true;
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause;
    out.error = cause ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
  }
  return out;
}
