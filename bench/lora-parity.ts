// `node dist/bench/lora-parity.js [BASE.gguf] [--rank 8] [--alpha 16] [--seed 1] [--tokens 16]
//  [--top 5] [--tolerance 1e-4] [--tie 1e-3] [--peer PATH] [--llama-only]`: a seeded random LoRA
// adapter of the base (all seven modules; default base ../shared/models/rand256.gguf) written both
// as a llama.cpp GGUF adapter and as a PEFT directory with the same numbers. llama-server runs the
// base alone and with `--lora ADAPTER` (the adapter must change its output); ortllm serves the base
// with both forms as --lora-modules, each prompt is sent for the base and both adapters at once, and
// each answer's greedy ids and logprobs are compared with llama.cpp's (bench/llama-parity.ts's
// rules). Exit status 1 on a mismatch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadGgufModel, type GgufModel } from '../src/model/gguf/load-gguf';
import { ggufTokenizerMetadata, writeModelGguf } from '../src/model/gguf/write-model';
import { loadLoraAdapter } from '../src/model/lora/load-lora';
import { LORA_MODULES } from '../src/model/lora/lora-weights';
import { mergeLora, weightAsF32 } from '../src/model/lora/merge-lora';
import { writeRandomGgufAdapter, writeRandomPeftAdapter } from '../src/model/lora/write-adapter';
import type { DecoderArchConfig } from '../src/model/types';
import { arg, compare, defaultPeer, defaultPrompts, files, llamaSteps, ortllmSteps, startLlamaServer, type Step } from './llama-parity';
import { startServer } from './processes';

const repoRoot = resolve(__dirname, '..', '..');
const BASE_NAME = 'parity';

/** Greedy steps of llama-server for each prompt, once per set of extra arguments (the base alone, then with --lora). */
async function llamaRuns(peer: string, base: string, runs: readonly string[][], prompts: number[][], context: number, tokens: number, top: number): Promise<Step[][][]> {
  const out: Step[][][] = [];
  for (const run of runs) {
    const server = await startLlamaServer(peer, base, context, run);
    try {
      const steps: Step[][] = [];
      for (const prompt of prompts) steps.push(await llamaSteps(server, prompt, tokens, top));
      out.push(steps);
    } finally {
      await server.stop(); // never two llama-servers at once
    }
  }
  return out;
}

/** How far the adapter moves llama.cpp's output: prompts whose greedy ids change, and the largest logprob change of a shared top token at the first step. */
function adapterEffect(base: Step[][], adapted: Step[][]): { changedIds: number; firstStepDiff: number } {
  let changedIds = 0;
  let firstStepDiff = 0;
  base.forEach((steps, i) => {
    if (steps.some((s, j) => s.id !== adapted[i][j]?.id)) changedIds++;
    for (const [id, lp] of steps[0]?.top ?? []) {
      const other = adapted[i][0]?.top.get(id);
      if (other !== undefined) firstStepDiff = Math.max(firstStepDiff, Math.abs(lp - other));
    }
  });
  return { changedIds, firstStepDiff };
}

/** The base with the adapter (as ortllm's loader reads it) folded into its weights, as one float32 GGUF. */
async function writeMergedModel(path: string, model: GgufModel, adapter: string): Promise<void> {
  const config = model.config as DecoderArchConfig;
  const lora = await loadLoraAdapter(adapter, config, { maxRank: 1 << 16, dtype: 'float32' });
  const merged = mergeLora(model.weights!, lora);
  const tensors = merged.names().map((name) => ({ name, shape: merged.get(name).shape, values: () => weightAsF32(merged.get(name)) }));
  writeModelGguf(path, config, tensors, ggufTokenizerMetadata(model.file), 'f32', 'lora-merged');
}

async function main(): Promise<void> {
  const base = files()[0] ?? resolve(repoRoot, '..', 'shared', 'models', 'rand256.gguf');
  const rank = Number(arg('rank', '8'));
  const alpha = Number(arg('alpha', '16'));
  const seed = Number(arg('seed', '1'));
  const tokens = Number(arg('tokens', '16'));
  const top = Number(arg('top', '5'));
  const tolerance = Number(arg('tolerance', '1e-4'));
  const tie = Number(arg('tie', '1e-3'));
  const peer = arg('peer', defaultPeer());
  const model = await loadGgufModel(base, { loadWeights: true });
  const config = model.config as DecoderArchConfig;
  const bos = model.file.metadata['tokenizer.ggml.bos_token_id'];
  const prompts = defaultPrompts(config.vocabSize, typeof bos === 'number' ? bos : null).slice(0, 4);
  const context = Math.max(...prompts.map((p) => p.length)) + tokens + 16;

  const dir = mkdtempSync(join(tmpdir(), 'ortllm-lora-parity-'));
  try {
    const options = { rank, alpha, seed, modules: LORA_MODULES };
    const ggufAdapter = join(dir, 'adapter.gguf');
    const peftAdapter = join(dir, 'adapter-peft');
    writeRandomGgufAdapter(ggufAdapter, config, options);
    writeRandomPeftAdapter(peftAdapter, config, options);
    console.log(`${base}: random LoRA rank ${rank}, alpha ${alpha}, seed ${seed}, all seven modules of ${config.numLayers} layers`);

    const mergedModel = join(dir, 'merged.gguf');
    await writeMergedModel(mergedModel, model, ggufAdapter);
    const [baseSteps, adapterSteps] = await llamaRuns(peer, base, [[], ['--lora', ggufAdapter]], prompts, context, tokens, top);
    const [mergedSteps] = await llamaRuns(peer, mergedModel, [[]], prompts, context, tokens, top);
    const effect = adapterEffect(baseSteps, adapterSteps);
    let failed = effect.changedIds === 0 && effect.firstStepDiff < 1e-3;
    console.log(
      `llama-server with --lora: greedy ids change on ${effect.changedIds}/${prompts.length} prompts, first-step logprobs move up to ${effect.firstStepDiff.toExponential(2)}${failed ? '  FAIL: the adapter changes nothing' : ''}`,
    );
    // Checks the adapter file's layout (orientation, q/k row order, scale) against llama.cpp itself.
    for (let i = 0; i < prompts.length; i++) {
      const v = compare(adapterSteps[i], mergedSteps[i], tolerance, tie);
      failed ||= !v.ok;
      console.log(`llama-server merged model (W + scaling·B·A from ortllm's loader) vs --lora, prompt ${i}: ${v.line}${v.ok ? '' : '  FAIL'}`);
    }
    if (process.argv.includes('--llama-only')) {
      process.exitCode = failed ? 1 : 0;
      return;
    }

    const ortllm = await startServer(
      process.execPath,
      [
        resolve(repoRoot, 'dist', 'src', 'main.js'), 'serve', base, '--port', '0', '--kv-cache-dtype', 'float32', '--max-model-len', String(context),
        '--served-model-name', BASE_NAME, '--disable-log-stats', '--enable-lora', '--max-lora-rank', String(Math.max(16, rank)), '--max-loras', '2',
        '--lora-modules', `lora-gguf=${ggufAdapter}`, `lora-peft=${peftAdapter}`,
      ],
      repoRoot,
      'ortllm',
    );
    // The PEFT directory holds the GGUF adapter's numbers: both match llama.cpp with --lora.
    const served: Array<{ model: string; expected: Step[][] }> = [
      { model: BASE_NAME, expected: baseSteps },
      { model: 'lora-gguf', expected: adapterSteps },
      { model: 'lora-peft', expected: adapterSteps },
    ];
    try {
      // Each prompt is sent for the base and both adapters at once, so steps mix their rows.
      for (let i = 0; i < prompts.length; i++) {
        const answers = await Promise.all(served.map(({ model: name }) => ortllmSteps(ortllm, prompts[i], tokens, top, name)));
        served.forEach(({ model: name, expected }, r) => {
          const v = compare(expected[i], answers[r], tolerance, tie);
          failed ||= !v.ok;
          console.log(`${name} prompt ${i} (${prompts[i].length} tokens): ${v.line}${v.ok ? '' : '  FAIL'}`);
        });
      }
    } finally {
      await ortllm.stop();
    }
    console.log(failed ? 'lora parity: FAIL' : 'lora parity: ok');
    process.exitCode = failed ? 1 : 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 2;
  });
}
