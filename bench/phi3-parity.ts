// ortllm vs llama.cpp's llama-server on the same phi3 GGUFs (bench/random-phi3.ts: a
// Phi-4-mini-shaped toy with partial rotary 0.75, a Phi-3.5-mini-shaped one with whole-head RoPE,
// both LongRoPE, F32 weights): greedy ids and each chosen token's logprob for a token-id prompt,
// at a context at most original_max_position_embeddings (short factors) and above it (long).
// llama-server runs with one thread, an F32 KV cache and no flash attention; never two at once.
//
//   node dist/bench/phi3-parity.js [LLAMA_SERVER] [DIR]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import type { LoadModelOptions } from '../src/model/types';
import { PHI4_MINI_TOY, writePhi3Model, type Phi3Shape } from './random-phi3';

const ROOT = resolve(__dirname, '..', '..');
const PROMPT = [1, 17, 250, 3, 99, 400, 12, 300, 301, 5, 77, 128, 64, 33, 201, 9];
const GENERATED = 16;
const SHAPES: Record<string, Phi3Shape> = {
  'phi4-mini-toy (partial rotary 0.75)': PHI4_MINI_TOY,
  'phi3.5-mini-toy (whole-head RoPE, untied)': { ...PHI4_MINI_TOY, partialRotaryFactor: 1, tieWordEmbeddings: false, numKvHeads: 4 },
};
/** 256 = the toys' original_max_position_embeddings: short factors; 4096 (> 256): long factors. */
const CONTEXTS = [256, 4096];

interface Decode {
  ids: number[];
  logprobs: number[];
  /** Per step, the logit margin between the best and the second token (ortllm side). */
  margins?: number[];
}

async function ortllmDecode(gguf: string, maxModelLen: number): Promise<Decode> {
  const options: LoadModelOptions = { model: gguf, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' };
  const model = await loadModel(options);
  const runner = await createRunner(model, { blockSize: 16, numBlocks: 8, device: 'cpu', maxModelLen });
  const out: Required<Decode> = { ids: [], logprobs: [], margins: [] };
  try {
    let tokens = PROMPT;
    let offset = 0;
    for (let i = 0; i < GENERATED; i++) {
      const { logits } = await runner.step([{ tokens, positionOffset: offset, blockTable: [0, 1, 2, 3] }]);
      offset += tokens.length;
      const order = [...logits.keys()].sort((a, b) => logits[b] - logits[a]);
      let max = -Infinity;
      for (const v of logits) max = Math.max(max, v);
      let sum = 0;
      for (const v of logits) sum += Math.exp(v - max);
      out.ids.push(order[0]);
      out.logprobs.push(logits[order[0]] - max - Math.log(sum));
      out.margins.push(logits[order[0]] - logits[order[1]]);
      tokens = [order[0]];
    }
  } finally {
    await runner.dispose();
  }
  return out;
}

async function llamaDecode(server: string, gguf: string, context: number, port: number): Promise<Decode> {
  const args = ['-m', gguf, '-t', '1', '--port', String(port), '-c', String(context), '-ctk', 'f32', '-ctv', 'f32', '-fa', 'off', '--no-warmup', '-np', '1'];
  const child = spawn(server, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  try {
    await waitHealthy(port, child, () => log);
    const res = await fetch(`http://127.0.0.1:${port}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // Greedy and nothing else: llama-server's default chain would penalise repeats.
      body: JSON.stringify({ prompt: PROMPT, n_predict: GENERATED, samplers: ['top_k'], top_k: 1, repeat_penalty: 1, dry_multiplier: 0, n_probs: 1, cache_prompt: false, ignore_eos: true, return_tokens: true }),
    });
    // Every generated id comes in `tokens`; probabilities only for tokens whose text was sent (a
    // trailing byte token of an unfinished UTF-8 character has none), so they may be fewer.
    const body = (await res.json()) as { tokens: number[]; completion_probabilities: Array<{ id: number; logprob: number }> };
    // Each entry belongs to the next generated token with its id (entries keep the tokens' order).
    const logprobs = body.tokens.map(() => NaN);
    let at = 0;
    for (const p of body.completion_probabilities) {
      while (at < body.tokens.length && body.tokens[at] !== p.id) at++;
      if (at < body.tokens.length) logprobs[at++] = p.logprob;
    }
    return { ids: body.tokens, logprobs };
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await exited;
    }
  }
}

async function waitHealthy(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`llama-server exited:\n${log()}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`llama-server did not start:\n${log()}`);
}

async function main(): Promise<void> {
  const server = process.argv[2] ?? join(ROOT, '.bench-cache', 'llama.cpp', 'build', 'bin', 'llama-server');
  const dir = process.argv[3] ?? join(ROOT, '.bench-cache', 'phi3-parity');
  const stories = join(ROOT, '..', 'shared', 'models', 'stories260K.gguf');
  let port = 43000 + Math.floor(Math.random() * 1000);
  for (const [name, shape] of Object.entries(SHAPES)) {
    const target = join(dir, name.split(' ')[0]);
    mkdirSync(target, { recursive: true });
    const { gguf } = await writePhi3Model(target, shape, stories);
    for (const context of CONTEXTS) {
      const ours = await ortllmDecode(gguf, context);
      const theirs = await llamaDecode(server, gguf, context, port++);
      const agree = ours.ids.findIndex((id, i) => id !== theirs.ids[i]);
      const shared = agree < 0 ? GENERATED : agree;
      const diffs = ours.logprobs.slice(0, shared).map((lp, i) => Math.abs(lp - theirs.logprobs[i])).filter((d) => !Number.isNaN(d));
      const table = context > 256 ? 'long' : 'short';
      console.log(
        `${name}, -c ${context} (${table} factors): ids ${agree < 0 ? `identical (${GENERATED})` : `part at step ${agree} (ortllm margin ${ours.margins![agree].toExponential(2)})`}, ` +
          `max |logprob diff| ${Math.max(...diffs).toExponential(2)} over the ${diffs.length} with llama.cpp logprobs`,
      );
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
