// `node dist/bench/fma-peak.js`: the fp32 compute ceiling of this machine and what it allows the
// embeddings bench. Measures the peak FMA rate (bench/fma-peak.c, built here with cc) on zmm
// (AVX-512, when /proc/cpuinfo lists avx512f) and ymm registers with 1..N threads, and prints the
// FLOPs one embedding of the bench's MiniLM-shaped BERT costs at 16 and 128 tokens with the
// embeddings/s no fp32 engine can pass on these cores. Set `npm run bench:embed`'s figures against
// it (docs/perf/embeddings.md has the comparison). Prints figures, asserts nothing.
// Knobs: FMA_ITERATIONS=50000000 (loop trips per thread per run; 12 FMAs each), FMA_REPEATS=5 (best kept).

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { buildCProbe } from './c-probe';
import { MINILM_CONFIG } from './random-bert';

function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** Best of `repeats` runs: [GFLOP/s over wall time, GFLOP per CPU-second of one thread]. */
function peak(binary: string, threads: number, registers: 'zmm' | 'ymm', iterations: number, repeats: number): [number, number] {
  let best: [number, number] = [0, 0];
  for (let r = 0; r < repeats; r++) {
    const [wall, perCpu] = execFileSync(binary, [String(threads), String(iterations), registers], { encoding: 'utf8' }).trim().split(' ').map(Number);
    best = [Math.max(best[0], wall), Math.max(best[1], perCpu)];
  }
  return best;
}

/**
 * FLOPs of one embedding of `tokens` tokens (multiply-adds count 2): per token and layer the linear
 * layers 2(4H² + 2HI) and attention's QKᵀ and AV 4SH; LayerNorm, softmax and GELU are left out (<1%).
 */
export function embeddingFlops(tokens: number, c = MINILM_CONFIG): number {
  const h = c.hiddenSize;
  return c.numLayers * tokens * (2 * (4 * h * h + 2 * h * c.intermediateSize) + 4 * tokens * h);
}

function main(): void {
  const hasAvx512 = existsSync('/proc/cpuinfo') && /\bavx512f\b/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  const binary = buildCProbe('fma-peak', ['-O2']);
  const iterations = envNumber('FMA_ITERATIONS', 50_000_000);
  const repeats = envNumber('FMA_REPEATS', 5);
  const cores = availableParallelism();
  const registers: Array<'zmm' | 'ymm'> = hasAvx512 ? ['zmm', 'ymm'] : ['ymm'];
  let perCore = 0;
  console.log(`fp32 FMA peak, best of ${repeats}: GFLOP/s over wall time / per CPU-second of one thread`);
  for (const reg of registers) {
    for (let threads = 1; threads <= cores; threads++) {
      const [wall, perCpu] = peak(binary, threads, reg, iterations, repeats);
      if (reg === registers[0]) perCore = Math.max(perCore, perCpu);
      console.log(`  ${reg} ${threads} thread(s): ${wall.toFixed(1).padStart(7)} / ${perCpu.toFixed(1).padStart(7)}`);
    }
  }
  const machine = perCore * cores;
  console.log(`\n${cores} cores x ${perCore.toFixed(1)} GFLOP/s = ${machine.toFixed(0)} GFLOP/s`);
  console.log('tokens   GFLOP per embedding   embeddings/s at that peak');
  for (const tokens of [16, 128]) {
    const flops = embeddingFlops(tokens);
    console.log(`${String(tokens).padStart(6)}   ${(flops / 1e9).toFixed(4).padStart(19)}   ${((machine * 1e9) / flops).toFixed(0).padStart(25)}`);
  }
}

main();
