// `node dist/bench/draft-agreement.js [--scales 0.05,0.1,0.2,0.3] [--tokens 200]`: how often the
// draft pair's draft picks the target's greedy token, teacher-forced: the target writes a greedy
// continuation of a few seeds, and the draft server's prompt_logprobs over that text give the
// rank of each of the target's tokens under the draft (rank 1 = the draft's own greedy choice).

import { join, resolve } from 'node:path';
import { BENCH_PAIR, ensureDraftPair } from './draft-pair';
import { startServer, type RunningServer } from './processes';
import { greedyContinuation } from './spec-load';

const repoRoot = resolve(__dirname, '..', '..');
const cacheDir = join(repoRoot, '.bench-cache');
const storiesPath = resolve(repoRoot, '..', 'shared', 'models', 'stories260K.gguf');
const SEEDS = [
  [1, 400, 200, 35],
  [1, 77, 300, 12, 90],
  [1, 123],
  [1, 9, 10, 11],
];

function serve(model: string): Promise<RunningServer> {
  const argv = [join(repoRoot, 'dist', 'src', 'main.js'), 'serve', model, '--port', '0', '--served-model-name', 'bench', '--max-model-len', '2048', '--disable-log-stats'];
  return startServer(process.execPath, argv, repoRoot, 'ortllm');
}

type PromptLogprobs = Array<Record<string, { rank: number }> | null>;

/** The fraction of `continuation`'s tokens that are the draft's greedy choice after `seed` + the tokens before them. */
async function agreement(draft: RunningServer, seed: number[], continuation: number[]): Promise<{ agree: number; total: number }> {
  const prompt = [...seed, ...continuation];
  const res = await fetch(`${draft.baseUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: 1, prompt_logprobs: 1 }),
  });
  if (!res.ok) throw new Error(`prompt_logprobs failed: HTTP ${res.status} ${await res.text()}`);
  const logprobs = ((await res.json()) as { choices: Array<{ prompt_logprobs: PromptLogprobs }> }).choices[0].prompt_logprobs;
  let agree = 0;
  for (let i = seed.length; i < prompt.length; i++) if (logprobs[i]?.[String(prompt[i])]?.rank === 1) agree++;
  return { agree, total: continuation.length };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const scales = (get('--scales') ?? '0.05,0.1,0.2,0.3').split(',').map(Number);
  const tokens = Number(get('--tokens') ?? 200);
  const pairs = [];
  for (const residualScale of scales) pairs.push({ residualScale, ...(await ensureDraftPair({ ...BENCH_PAIR, residualScale }, cacheDir, storiesPath)) });
  const draft = await serve(pairs[0].draft);
  try {
    for (const pair of pairs) {
      const target = await serve(pair.target);
      let agree = 0;
      let total = 0;
      try {
        for (const seed of SEEDS) {
          const r = await agreement(draft, seed, await greedyContinuation(target.baseUrl, seed, tokens));
          agree += r.agree;
          total += r.total;
        }
      } finally {
        await target.stop();
      }
      console.log(`residual scale ${pair.residualScale}: the draft's greedy token is the target's at ${((100 * agree) / total).toFixed(1)}% of ${total} positions`);
    }
  } finally {
    await draft.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
