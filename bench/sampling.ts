// `npm run bench:sampling` (after npm run build): time of one sampling step (SequenceSampler.sample for every
// sequence of a batch) for vocab 32000 × 64 sequences, per sampling configuration.
// Two logits sets: 'flat' (random-weight model: the worst case for top-p) and 'peaked'
// (LM-like: a broad normal body plus a few dozen strongly preferred tokens).
// Reports the median wall time and the process CPU time per step (the latter is the
// honest figure on a loaded machine).
//
// Options: --vocab 32000 --batch 64 --steps 30 --only <config name substring>
import { normalizeSamplingParams } from '../src/engine/sampling-params';
import { Rng, SamplingWorkspace, SequenceSampler } from '../src/engine/sampling';
import type { SamplingParams } from '../src/engine/types';

function arg(flag: string, dflt: number): number {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

const vocab = arg('--vocab', 32000);
const batch = arg('--batch', 64);
const steps = arg('--steps', 30);
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt >= 0 ? process.argv[onlyAt + 1] : null;

const configs: Record<string, Partial<SamplingParams>> = {
  greedy: { temperature: 0 },
  'temperature 0.8': { temperature: 0.8 },
  'top_k 50': { temperature: 0.8, top_k: 50 },
  'top_p 0.9': { temperature: 0.8, top_p: 0.9 },
  'top_k 50 + top_p 0.9 + min_p 0.05': { temperature: 0.8, top_k: 50, top_p: 0.9, min_p: 0.05 },
  'penalties + top_p 0.95': { temperature: 1, top_p: 0.95, repetition_penalty: 1.1, frequency_penalty: 0.5, presence_penalty: 0.5 },
  'top_p 0.9 + logprobs 5': { temperature: 0.8, top_p: 0.9, logprobs: 5 },
};

const rng = new Rng(1);
const normal = () => (rng.nextDouble() + rng.nextDouble() + rng.nextDouble() + rng.nextDouble() - 2) * 1.73;
const flat = Float32Array.from({ length: vocab * batch }, () => normal() * 2);
const peaked = Float32Array.from({ length: vocab * batch }, () => normal() * 2.5);
for (let i = 0; i < batch; i++) for (let j = 0; j < 40; j++) peaked[i * vocab + ((j * 7919 + i * 104729) % vocab)] += 8 + j * 0.2;
const ws = new SamplingWorkspace(vocab);

console.log(`sampling step, vocab ${vocab} × batch ${batch}, ${steps} steps: median wall ms / mean CPU ms per step`);
for (const [dataName, logits] of [['flat', flat], ['peaked', peaked]] as const) {
  for (const [name, partial] of Object.entries(configs)) {
    if (only && !name.includes(only)) continue;
    const params = normalizeSamplingParams(partial);
    const samplers = Array.from({ length: batch }, (_, i) =>
      new SequenceSampler({ params, promptTokenIds: Array.from({ length: 200 }, (_, j) => (j * 37 + i) % vocab), vocabSize: vocab, eosTokenIds: [2], seed: i }),
    );
    for (let s = 0; s < 3; s++) for (let i = 0; i < batch; i++) samplers[i].sample(logits, i * vocab, ws); // JIT warm-up
    const times: number[] = [];
    const cpu0 = process.cpuUsage();
    for (let s = 0; s < steps; s++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < batch; i++) samplers[i].sample(logits, i * vocab, ws);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const cpu = process.cpuUsage(cpu0);
    const cpuMs = (cpu.user + cpu.system) / 1000 / steps;
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    console.log(`${dataName.padEnd(7)} ${name.padEnd(36)} ${median.toFixed(1).padStart(7)} ms wall ${cpuMs.toFixed(1).padStart(7)} ms CPU  (${((cpuMs * 1000) / batch).toFixed(0)} µs/seq)`);
  }
}
