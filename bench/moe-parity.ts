// ortllm against llama.cpp's llama-server on the same random MoE GGUFs (a Mixtral-style `llama`
// file with ffn_*_exps tensors and a `qwen3moe` file with q/k norms), F32 and Q8_0: greedy token
// ids and the logprobs of each step's top-5, token-id prompts so tokenizers play no part.
//
//   node dist/bench/moe-parity.js PATH/TO/llama-server [--max-tokens 16]
//
// Prints, per file and prompt, where the greedy continuations first differ (none: equal) and the
// largest |logprob| difference over the steps both took on the same context.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf } from '../src/model/gguf/write-model';
import { gv, type GgufTypedValue, type GgufWriteType } from '../src/model/gguf/writer';
import type { DecoderArchConfig } from '../src/model/types';
import { freePort, startPolled, startServer, type RunningServer } from './processes';
import { lazyRandomTensors, llamaConfig } from './random-llama';

const repoRoot = resolve(__dirname, '..', '..');
const stories = resolve(repoRoot, '..', 'shared', 'models', 'stories260K.gguf');
const cacheDir = join(repoRoot, '.bench-cache', 'moe-parity');

const SHAPE: Partial<DecoderArchConfig> = { hiddenSize: 256, numLayers: 4, numHeads: 8, numKvHeads: 4, headDim: 32, vocabSize: 512, rmsNormEps: 1e-5, maxPositionEmbeddings: 2048, tieWordEmbeddings: false };
const MODELS: Array<{ name: string; config: DecoderArchConfig }> = [
  { name: 'mixtral-style llama, 8 experts top-2', config: llamaConfig({ ...SHAPE, intermediateSize: 256, numExperts: 8, numExpertsPerToken: 2, expertIntermediateSize: 256, normTopKProb: true }) },
  { name: 'qwen3moe, 8 experts top-3, q/k norms', config: llamaConfig({ ...SHAPE, architecture: 'qwen3moe', qkNorm: true, ropeTheta: 1e6, intermediateSize: 512, numExperts: 8, numExpertsPerToken: 3, expertIntermediateSize: 128, normTopKProb: true }) },
];

/** Seeded token-id prompts of a few lengths (ids 3..511: stories260K's ordinary pieces). */
function prompts(): number[][] {
  let s = 12345;
  const next = () => ((s = (s * 1103515245 + 12345) >>> 0) % 509) + 3;
  return [8, 60, 200].map((n) => [1, ...Array.from({ length: n - 1 }, next)]);
}

interface Step {
  id: number;
  top: Map<number, number>;
}

async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

async function ortllmSteps(server: RunningServer, prompt: number[], maxTokens: number): Promise<Step[]> {
  const res = await post(`${server.baseUrl}/v1/completions`, { model: 'm', prompt, max_tokens: maxTokens, temperature: 0, logprobs: 5, ignore_eos: true, return_tokens_as_token_ids: true });
  const lp = (res.choices as Array<{ logprobs: { tokens: string[]; top_logprobs: Array<Record<string, number>> } }>)[0].logprobs;
  const id = (t: string) => Number(t.replace('token_id:', ''));
  return lp.tokens.map((t, i) => ({ id: id(t), top: new Map(Object.entries(lp.top_logprobs[i]).map(([k, v]) => [id(k), v])) }));
}

async function llamaSteps(server: RunningServer, prompt: number[], maxTokens: number): Promise<Step[]> {
  const res = await post(`${server.baseUrl}/completion`, { prompt, n_predict: maxTokens, temperature: 0, n_probs: 5, ignore_eos: true, cache_prompt: false });
  const probs = res.completion_probabilities as Array<{ id: number; top_logprobs: Array<{ id: number; logprob: number }> }>;
  return probs.map((p) => ({ id: p.id, top: new Map(p.top_logprobs.map((t) => [t.id, t.logprob])) }));
}

function compare(ours: Step[], theirs: Step[]): string {
  let diverge = -1;
  let worst = 0;
  for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
    for (const [id, lp] of theirs[i].top) if (ours[i].top.has(id)) worst = Math.max(worst, Math.abs(lp - ours[i].top.get(id)!));
    if (ours[i].id !== theirs[i].id) {
      diverge = i;
      break;
    }
  }
  return `${diverge < 0 ? `greedy ids equal (${ours.length} tokens)` : `greedy ids differ at step ${diverge}`}, max |logprob diff| ${worst.toExponential(2)}`;
}

/**
 * stories260K's vocabulary with its byte pieces (<0xE2> …) renamed as plain ones: llama-server
 * holds back a token that ends inside a UTF-8 sequence and reports no logprobs for it, which
 * would shift its steps against ours.
 */
function plainPieces(meta: Record<string, GgufTypedValue>): Record<string, GgufTypedValue> {
  const tokens = [...(meta['tokenizer.ggml.tokens'].value as string[])];
  const types = [...(meta['tokenizer.ggml.token_type'].value as number[])];
  const BYTE = 6;
  types.forEach((type, i) => {
    if (type !== BYTE) return;
    tokens[i] = `▁byte${i}`;
    types[i] = 1;
  });
  return { ...meta, 'tokenizer.ggml.tokens': gv.strings(tokens), 'tokenizer.ggml.token_type': gv.i32s(types) };
}

async function main(): Promise<void> {
  const llamaServer = process.argv[2];
  if (!llamaServer) throw new Error('usage: moe-parity.js PATH/TO/llama-server [--max-tokens N]');
  const at = process.argv.indexOf('--max-tokens');
  const maxTokens = at > 0 ? Number(process.argv[at + 1]) : 16;
  mkdirSync(cacheDir, { recursive: true });
  const tokenizer = plainPieces(ggufTokenizerMetadata(await readGgufFile(stories)));
  for (const { name, config } of MODELS) {
    for (const type of ['f32', 'q8_0'] as GgufWriteType[]) {
      const path = join(cacheDir, `${config.architecture}-${type}.gguf`);
      writeModelGguf(path, config, lazyRandomTensors(config, 77), tokenizer, type, name);
      const port = await freePort();
      const theirs = await startPolled(llamaServer, ['-m', path, '-t', '1', '-np', '1', '-c', '1024', '--host', '127.0.0.1', '--port', String(port), '--no-webui'], port, 'llama-server');
      const ours = await startServer(process.execPath, [join(repoRoot, 'dist', 'src', 'main.js'), 'serve', path, '--port', '0', '--max-model-len', '1024', '--served-model-name', 'm', '--disable-log-stats'], repoRoot, 'ortllm');
      try {
        for (const prompt of prompts()) {
          const line = compare(await ortllmSteps(ours, prompt, maxTokens), await llamaSteps(theirs, prompt, maxTokens));
          console.log(`${name}, ${type.toUpperCase()}, prompt of ${prompt.length} tokens: ${line}`);
        }
      } finally {
        await ours.stop();
        await theirs.stop();
      }
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
