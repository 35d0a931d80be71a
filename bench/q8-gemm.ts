// `node dist/bench/q8-gemm.js [--shapes 768x768,...] [--rows 1,8,32,128,512] [--threads 1,2]
//  [--ms 400] [--rounds 2] [--cold] [--spin 100] [--kernel avx2|avx512vnni]`: one Q8_0 linear y = x W^T
// (shape KxN: K inputs, N outputs; random Q8_0 blocks, random activations) timed two ways,
// interleaved: onnxruntime's MatMulNBits in a one-op session (built with the project's own graph
// builder, accuracy level 4 = int8 activations, as the runner's graphs) and the addon's kernel
// (native/src/q8-gemm.cc): AVX512-VNNI where the CPU has it, else AVX2; --kernel avx2 runs the
// AVX2 one on a VNNI CPU.
// Prints per (shape, rows, threads) the CPU and wall microseconds per call and GOPS (2 M N K / wall),
// and the largest difference between the two outputs relative to the output's largest magnitude.
// --cold: the kernel cycles through packed copies of the weight (>= 96 MB in all, past the
// last-level cache), so each call streams its weights from memory as a runner's step does
// (MatMulNBits stays on its one, cached copy). --spin N: the pool's helpers spin N us between
// calls (setThreads' spinMicros; the Q8_0 runner's 100), instead of a futex wake-up per call.
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../src/model/graph/graph-builder';
import { quantizedLinear } from '../src/model/graph/matmul-nbits';
import { unpackGgml } from '../src/model/graph/ggml-unpack';
import { OnnxDataType } from '../src/model/graph/onnx-proto';
import { nativeKernels, type Q8Kernel } from '../src/model/runner/native-kernels';
import { SyncSession } from '../src/model/runner/session';
import { arg, comparisonRow, maxRelDiff, seededUniform, timeCall } from './kernel-timing';

const SHAPES = '768x768,768x2048,2048x768,2048x2048,2048x256,2048x5632,5632x2048';

/** GGML Q8_0 blocks of an [n, k] weight: f16 scale ~0.002-0.004, random int8 codes. */
function randomQ8(n: number, k: number, seed: number): Uint8Array {
  const data = new Uint8Array((n * k * 34) / 32);
  let x = seed;
  for (let b = 0; b < data.length; b += 34) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const half = 0x1800 | ((x >>> 20) & 0x3ff); // 2^-9 .. 2^-8
    data[b] = half & 255;
    data[b + 1] = half >> 8;
    for (let i = 0; i < 32; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      data[b + 2 + i] = x >>> 24;
    }
  }
  return data;
}

function main(): void {
  const native = nativeKernels();
  if (!native?.q8Available) throw new Error('the addon is not built or this CPU has neither AVX512-VNNI nor AVX2');
  const kernel = arg('kernel', '') as Q8Kernel | '';
  const gemm = (packed: Uint8Array, x: Float32Array, y: Float32Array, m: number, n: number, k: number) =>
    kernel ? native.q8Gemm(packed, x, y, m, n, k, kernel) : native.q8Gemm(packed, x, y, m, n, k);
  const shapes = arg('shapes', SHAPES).split(',').map((s) => s.split('x').map(Number) as [number, number]);
  const rowsList = arg('rows', '1,8,32,128,512').split(',').map(Number);
  const threadsList = arg('threads', '1,2').split(',').map(Number);
  const ms = Number(arg('ms', '400'));
  const rounds = Number(arg('rounds', '2'));
  const cold = process.argv.includes('--cold');
  const spin = Number(arg('spin', '0'));
  console.log(`shape KxN   rows thr | MatMulNBits us (cpu)  GOPS | ${kernel || 'addon'} us (cpu)  GOPS | speed-up | max rel diff`);
  for (const [k, n] of shapes) {
    const q8 = randomQ8(n, k, k * 31 + n);
    const unpacked = unpackGgml('q8_0', q8, n * k)!;
    const packed = native.q8Pack(unpacked.codes, unpacked.scales, n, k);
    const copies = cold ? Array.from({ length: Math.ceil(96e6 / packed.length) }, () => native.q8Pack(unpacked.codes, unpacked.scales, n, k)) : [packed];
    let call = 0;
    for (const threads of threadsList) {
      const g = new GraphBuilder('q8');
      const x = g.input('x', OnnxDataType.FLOAT, ['m', k]);
      const y = quantizedLinear(g, x, 'w', [{ kind: 'quantized', format: 'q8_0', shape: [n, k], data: q8 }], null, k, n)!;
      g.output(g.op('Identity', [y]), OnnxDataType.FLOAT, ['m', n]);
      const session = SyncSession.create(g.build({ '': 23, 'com.microsoft': 1 }), { device: 'cpu', intraOpThreads: threads });
      const outName = Object.keys(session.run({ x: new ort.Tensor('float32', new Float32Array(k), [1, k]) }))[0];
      native.setThreads(threads, spin);
      for (const m of rowsList) {
        const xs = seededUniform(m * k, m + k);
        const feed = { x: new ort.Tensor('float32', xs, [m, k]) };
        const out = new Float32Array(m * n);
        const ops = 2 * m * n * k;
        const ortOut = session.run(feed)[outName].data as Float32Array;
        gemm(packed, xs, out, m, n, k);
        const relDiff = maxRelDiff(out, ortOut);
        for (let round = 0; round < rounds; round++) {
          const a = timeCall(() => session.run(feed), ms);
          const b = timeCall(() => gemm(copies[call++ % copies.length], xs, out, m, n, k), ms);
          console.log(comparisonRow(k, n, m, threads, a, b, ops, relDiff));
        }
      }
      void session.release();
    }
  }
}

main();
