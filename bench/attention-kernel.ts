// `node dist/bench/attention-kernel.js [--shapes stories260K,100M] [--kv float32,half,bfloat16,fp8_e4m3,fp8_e5m2]
//  [--contexts 128,1024] [--batch 32] [--ms 1500] [--shared] [--threads 1] [--simd avx512,avx512bf16] [--window 0,512]`: the native attention
// kernel alone (one thread unless --threads says more), CPU ms (and wall ms) per decode step of
// `batch` sequences at each context, every layer of the shape. The cache rows are written with
// random values first (a filled cache, as the runner's at depth: unwritten pages would all read
// the one zero page), in 16-row blocks in order. Layers take caches in turn, one per layer up to
// 96 MB of caches in all (at least two), so at context 1024 every layer's call reads its rows
// from memory as in the runner: stories260K gets one per layer (44 MB as float32), the 100M shape
// two, each larger than the LLC (two caches for stories260K would sit in the 32 MB LLC and hide
// its memory stall). --shared points every sequence at the first sequence's blocks: the rows then
// come from L2/L3, which leaves the kernel's arithmetic. --simd times each listed kernel level (the
// CPU's best by default) on the same caches, one after the other per context. The kernel-alone figures in
// docs/perf/attention.md were measured with it. --prefill times one prompt of `context` tokens per context instead
// (one sequence, every layer's attention over its own rows: the prefill tiles; the rows of the
// first sequence's blocks). --window times each listed sliding window (0: none) on the same caches.
import { nativeKernels, SIMD_LEVELS, type SimdLevel } from '../src/model/runner/native-kernels';

const SHAPES: Record<string, { layers: number; heads: number; kvHeads: number; headDim: number }> = {
  stories260K: { layers: 5, heads: 8, kvHeads: 4, headDim: 8 },
  '100M': { layers: 12, heads: 12, kvHeads: 12, headDim: 64 },
  '1.1B': { layers: 22, heads: 32, kvHeads: 4, headDim: 64 },
};
const KV_CODES: Record<string, number> = { float32: 0, half: 1, bfloat16: 2, fp8_e4m3: 3, fp8_e5m2: 4 };
const KV_BYTES: Record<string, number> = { float32: 4, half: 2, bfloat16: 2, fp8_e4m3: 1, fp8_e5m2: 1 };
const BLOCK_SIZE = 16;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** Random codes of values in a binade: 16-bit in [1, 2) (half) or [0.5, 1) (bfloat16), 8-bit in ±[1, 2); the sign of bytes random. */
const CODE_BASE: Record<string, [number, number]> = { half: [0x3c00, 0xff], bfloat16: [0x3f00, 0xff], fp8_e4m3: [0x38, 0x87], fp8_e5m2: [0x3c, 0x83] };

/** Random rows: float32 in [-0.5, 0.5); codes of other types from CODE_BASE. */
function fill(a: Float32Array | Uint16Array | Uint8Array, kv: string, seed: number): void {
  let x = seed;
  const [base, bits] = CODE_BASE[kv] ?? [0, 0];
  for (let i = 0; i < a.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    a[i] = kv === 'float32' ? x / 2 ** 32 - 0.5 : base | ((x >>> 24) & bits);
  }
}

function main(): void {
  const native = nativeKernels();
  if (!native) throw new Error('the native attention addon is not built (npm run build:native)');
  const threads = Number(arg('threads', '1'));
  native.setThreads(threads);
  const contexts = arg('contexts', '128,1024').split(',').map(Number);
  const batch = Number(arg('batch', '32'));
  const ms = Number(arg('ms', '1500'));
  const shared = process.argv.includes('--shared');
  const prefill = process.argv.includes('--prefill');
  const simd = arg('simd', '').split(',').filter(Boolean) as SimdLevel[];
  const windows = arg('window', '0').split(',').map(Number);
  for (const w of windows) if (!Number.isInteger(w) || w < 0) throw new Error(`--window takes integers >= 0 (0: none), not ${w}`);
  for (const level of simd) if (!SIMD_LEVELS.includes(level)) throw new Error(`unknown --simd ${level} (${SIMD_LEVELS.join(', ')})`);
  const blocksPerSeq = Math.ceil((Math.max(...contexts) + 64) / BLOCK_SIZE);
  console.log(`attention kernel: ${prefill ? 'one prefill per step' : `batch ${batch}`}, blocks of ${BLOCK_SIZE}, ${threads} thread(s)${shared ? ', every sequence on the same blocks' : ''}`);
  for (const shapeName of arg('shapes', 'stories260K,100M').split(',')) {
    const s = SHAPES[shapeName];
    if (!s) throw new Error(`unknown shape ${shapeName} (${Object.keys(SHAPES).join(', ')})`);
    const n = batch * blocksPerSeq * BLOCK_SIZE * s.kvHeads * s.headDim;
    for (const kv of arg('kv', 'float32,half,bfloat16').split(',')) {
      if (!(kv in KV_CODES)) throw new Error(`unknown --kv ${kv} (${Object.keys(KV_CODES).join(', ')})`);
      const cacheBytes = 2 * n * KV_BYTES[kv];
      const count = Math.max(2, Math.min(s.layers, Math.ceil((96 * 2 ** 20) / cacheBytes)));
      const caches = Array.from({ length: count }, (_, l) => {
        const [k, v] = [0, 1].map(() => (kv === 'float32' ? new Float32Array(n) : KV_BYTES[kv] === 2 ? new Uint16Array(n) : new Uint8Array(n)));
        fill(k, kv, 3 + 2 * l);
        fill(v, kv, 4 + 2 * l);
        return { k, v };
      });
      for (const context of contexts) {
        const seqs = new Int32Array(4 * batch);
        const tables = new Int32Array(batch * blocksPerSeq);
        for (let b = 0; b < batch; b++) {
          seqs.set([b, 1, context, b * blocksPerSeq], 4 * b);
          for (let i = 0; i < blocksPerSeq; i++) tables[b * blocksPerSeq + i] = (shared ? 0 : b * blocksPerSeq) + i;
        }
        const rows = prefill ? context : batch;
        const q = new Float32Array(rows * s.heads * s.headDim);
        fill(q, 'float32', 9);
        const out = new Float32Array(q.length);
        const dims = Int32Array.from([s.heads, s.kvHeads, s.headDim, BLOCK_SIZE, KV_CODES[kv]]);
        let window = 0;
        const step = () => {
          const stepSeqs = prefill ? Int32Array.from([0, context, 0, 0]) : seqs;
          for (let l = 0; l < s.layers; l++) native.attention(q, out, caches[l % caches.length].k, caches[l % caches.length].v, stepSeqs, tables, dims, 1 / Math.sqrt(s.headDim), window);
        };
        for (const [level, w] of (simd.length ? simd : [undefined]).flatMap((l) => windows.map((w) => [l, w] as const))) {
          window = w;
          const used = level ? native.setSimd(level) : '';
          step();
          const cpu0 = process.cpuUsage();
          const t0 = performance.now();
          let steps = 0;
          while (performance.now() - t0 < ms) {
            step();
            steps++;
          }
          const cpu = process.cpuUsage(cpu0);
          const wall = performance.now() - t0;
          const shown = `${used ? ` ${used.padEnd(10)}` : ''}${windows.length > 1 || w > 0 ? ` window ${String(w).padStart(5)}` : ''}`;
          console.log(`${shapeName.padEnd(12)} ${kv.padEnd(9)} ctx ${String(context).padStart(5)}${shown}: cpu ${((cpu.user + cpu.system) / 1000 / steps).toFixed(2)} ms/step, wall ${(wall / steps).toFixed(2)} (${steps} steps)`);
        }
      }
    }
  }
}

main();
