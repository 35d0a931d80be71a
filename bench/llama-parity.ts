// `node dist/bench/llama-parity.js FILE.gguf... [--peer PATH] [--prompt-ids 1,2,3;1,5] [--tokens 24]
//  [--top 5] [--tolerance 1e-4] [--tie 1e-3] [--ortllm-args "..."] [--peer-args "..."]`: greedy
// completions of token-id prompts on llama.cpp's llama-server and on ortllm, each serving the same
// GGUF file, compared token by token (docs/model-parity.md). Both keep the KV cache in float32
// (ortllm --kv-cache-dtype float32; llama-server -ctk f32 -ctv f32 -fa off: its CPU flash
// attention rounds Q to half). Per prompt: identical greedy ids, or the first divergence with
// llama.cpp's logprob margin between its top two there; and the largest |logprob difference| of
// the tokens both list in their top logprobs over the common prefix (the divergence included: its
// context is still shared). Exit status 1 when ids differ where llama.cpp's top two are at least
// --tie apart, or a logprob differs by more than --tolerance.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { freePort, startPolled, startServer, type RunningServer } from './processes';

const repoRoot = resolve(__dirname, '..', '..');

/** Where bench/build-llama-server.sh puts llama-server: this checkout's .bench-cache, else the main checkout's. */
export function defaultPeer(root = repoRoot): string {
  const own = resolve(root, '.bench-cache', 'llama.cpp', 'build', 'bin', 'llama-server');
  return existsSync(own) ? own : '/work/main/.bench-cache/llama.cpp/build/bin/llama-server';
}

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** The GGUF paths: every argument that is neither an option nor an option's value. */
export function files(): string[] {
  const out: string[] = [];
  for (let i = 2; i < process.argv.length; i++) {
    if (process.argv[i].startsWith('--')) i++;
    else out.push(process.argv[i]);
  }
  return out;
}

/** One generated token: its id, and the top logprobs by id (empty where the server gave none). */
export interface Step {
  id: number;
  top: Map<number, number>;
}

/**
 * Seeded prompts of varied lengths for a vocabulary: the BOS token (when the file names one)
 * then ids from 3 up; the longer ones exceed the small sliding windows of the test models.
 */
export function defaultPrompts(vocabSize: number, bos: number | null): number[][] {
  let s = 12345;
  const next = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0);
  return [1, 6, 23, 70, 150].map((length) => {
    const ids = Array.from({ length }, () => 3 + (next() % (vocabSize - 3)));
    if (bos !== null) ids[0] = bos;
    return ids;
  });
}

export async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * llama-server's /completion: every generated id (return_tokens) and the logprobs of the model's own
 * distribution (post_sampling_probs false). It lists logprobs only for tokens that complete their
 * UTF-8 text (a token ending inside a character has none): they are matched to the ids in order.
 */
export async function llamaSteps(server: RunningServer, prompt: number[], tokens: number, top: number): Promise<Step[]> {
  return llamaStepsOf(await post(`${server.baseUrl}/completion`, { prompt, n_predict: tokens, temperature: 0, n_probs: top, post_sampling_probs: false, cache_prompt: false, return_tokens: true }));
}

/** The steps of a /completion answer (return_tokens and n_probs asked). */
export function llamaStepsOf(r: Record<string, unknown>): Step[] {
  // Absent when no generated token completed its text (all inside one unfinished character).
  const probs = (r.completion_probabilities ?? []) as Array<{ id: number; top_logprobs: Array<{ id: number; logprob: number }> }>;
  let next = 0;
  return (r.tokens as number[]).map((id) => {
    const p = probs[next]?.id === id ? probs[next++] : null;
    return { id, top: new Map(p ? p.top_logprobs.map((t) => [t.id, t.logprob]) : []) };
  });
}

/** ortllm's /v1/completions with vLLM's return_tokens_as_token_ids ("token_id:N" keys); `model` names a served model or LoRA adapter. */
export async function ortllmSteps(server: RunningServer, prompt: number[], tokens: number, top: number, model?: string): Promise<Step[]> {
  const r = await post(`${server.baseUrl}/v1/completions`, { model, prompt, max_tokens: tokens, temperature: 0, logprobs: top, return_tokens_as_token_ids: true });
  const lp = (r.choices as Array<{ logprobs: { tokens: string[]; token_logprobs: number[]; top_logprobs: Array<Record<string, number>> } }>)[0].logprobs;
  const id = (key: string) => Number(key.slice('token_id:'.length));
  return lp.tokens.map((t, i) => ({ id: id(t), top: new Map(Object.entries(lp.top_logprobs[i]).map(([k, v]) => [id(k), v])) }));
}

export interface Verdict {
  line: string;
  ok: boolean;
}

/** Compares one prompt's steps (llama.cpp's `a`, ortllm's `b`). */
export function compare(a: Step[], b: Step[], tolerance: number, tie: number): Verdict {
  let diverged = -1;
  for (let i = 0; i < Math.min(a.length, b.length) && diverged < 0; i++) if (a[i].id !== b[i].id) diverged = i;
  if (diverged < 0 && a.length !== b.length) diverged = Math.min(a.length, b.length); // one side stopped (EOS)
  const last = diverged < 0 ? a.length - 1 : Math.min(diverged, a.length - 1, b.length - 1);
  let maxDiff = 0;
  let compared = 0;
  for (let i = 0; i <= last; i++) {
    for (const [id, lp] of a[i].top) {
      const other = b[i].top.get(id);
      if (other === undefined) continue;
      maxDiff = Math.max(maxDiff, Math.abs(lp - other));
      compared++;
    }
  }
  const diffText = `max |dlogprob| ${maxDiff.toExponential(2)} (${compared} logprobs)`;
  if (diverged < 0) return { line: `${a.length}/${a.length} greedy ids identical, ${diffText}`, ok: maxDiff <= tolerance };
  const ranked = [...(a[diverged]?.top.values() ?? [])].sort((x, y) => y - x); // none where llama.cpp listed none: NaN, not a tie
  const margin = ranked.length >= 2 ? ranked[0] - ranked[1] : NaN;
  const nearTie = margin < tie;
  const ids = `llama.cpp ${a[diverged]?.id ?? 'stopped'}, ortllm ${b[diverged]?.id ?? 'stopped'}`;
  return {
    line: `ids differ at step ${diverged} (${ids}; llama.cpp's top-2 margin ${margin.toExponential(2)}${nearTie ? ': a near-tie' : ''}), ${diffText} up to it`,
    ok: nearTie && maxDiff <= tolerance,
  };
}

/** llama-server on one thread with a float32 KV cache and no flash attention (see the header). */
export async function startLlamaServer(peer: string, path: string, context: number, extraArgs: string[]): Promise<RunningServer> {
  const port = await freePort();
  return startPolled(
    peer,
    ['-m', path, '-t', '1', '-np', '1', '-c', String(context), '-ctk', 'f32', '-ctv', 'f32', '-fa', 'off', '--host', '127.0.0.1', '--port', String(port), '--no-webui', ...extraArgs],
    port,
    'llama-server',
  );
}

async function main(): Promise<void> {
  const paths = files();
  if (paths.length === 0) throw new Error('usage: node dist/bench/llama-parity.js FILE.gguf... [--peer PATH] [--prompt-ids 1,2,3;1,5] [--tokens N]');
  const peer = arg('peer', defaultPeer());
  const tokens = Number(arg('tokens', '24'));
  const top = Number(arg('top', '5'));
  const tolerance = Number(arg('tolerance', '1e-4'));
  const tie = Number(arg('tie', '1e-3'));
  const ortllmArgs = arg('ortllm-args', '').split(' ').filter(Boolean);
  const peerArgs = arg('peer-args', '').split(' ').filter(Boolean);
  const given = arg('prompt-ids', '');
  let failed = false;
  for (const path of paths) {
    const gguf = await readGgufFile(path);
    const vocabSize = gguf.tensors.find((t) => t.name === 'token_embd.weight')!.ggmlShape[1];
    const bos = gguf.metadata['tokenizer.ggml.bos_token_id'];
    const prompts = given ? given.split(';').map((p) => p.split(',').map(Number)) : defaultPrompts(vocabSize, typeof bos === 'number' ? bos : null);
    const context = Math.max(...prompts.map((p) => p.length)) + tokens + 16;
    const llama = await startLlamaServer(peer, path, context, peerArgs);
    const expected: Step[][] = [];
    try {
      for (const prompt of prompts) expected.push(await llamaSteps(llama, prompt, tokens, top));
    } finally {
      await llama.stop(); // never two spinning servers at once
    }
    const ortllm = await startServer(
      process.execPath,
      [resolve(repoRoot, 'dist', 'src', 'main.js'), 'serve', path, '--port', '0', '--kv-cache-dtype', 'float32', '--max-model-len', String(context), '--served-model-name', 'parity', '--disable-log-stats', ...ortllmArgs],
      repoRoot,
      'ortllm',
    );
    try {
      for (let i = 0; i < prompts.length; i++) {
        const v = compare(expected[i], await ortllmSteps(ortllm, prompts[i], tokens, top), tolerance, tie);
        failed ||= !v.ok;
        console.log(`${path} prompt ${i} (${prompts[i].length} tokens): ${v.line}${v.ok ? '' : '  FAIL'}`);
      }
    } finally {
      await ortllm.stop();
    }
  }
  console.log(failed ? 'parity: FAIL' : 'parity: ok');
  process.exitCode = failed ? 1 : 0;
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 2;
  });
}
