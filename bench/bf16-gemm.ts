// `node dist/bench/bf16-gemm.js [--shapes 384x384,384x1536,1536x384] [--rows 16,128,512,2048]
//  [--threads 1,2] [--ms 300] [--rounds 2]`: one linear y = x W^T + b (shape KxN: K inputs, N
// outputs; random weights and activations) timed two ways, interleaved: onnxruntime's float32
// Gemm (transB, bias; the encoder graph's own linear, graph/linear.ts) in a one-op session, and
// the addon's AVX512-BF16 kernel (native/src/bf16-gemm.cc: weights and activations rounded to
// bfloat16, float32 sums). Prints per (shape, rows, threads) wall (and CPU) microseconds per call,
// GFLOP/s (2 M N K / wall), and the largest difference between the outputs relative to the
// output's largest magnitude (the bfloat16 rounding). Figures: native/src/bf16-gemm.cc's header.
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../src/model/graph/graph-builder';
import { emitLinear } from '../src/model/graph/linear';
import { OnnxDataType } from '../src/model/graph/onnx-proto';
import { BF16_ACTIVATION, nativeKernels } from '../src/model/runner/native-kernels';
import { SyncSession } from '../src/model/runner/session';
import { arg, comparisonRow, maxRelDiff, seededUniform, timeCall } from './kernel-timing';

function main(): void {
  const native = nativeKernels();
  if (!native?.bf16Available) throw new Error('the addon is not built or this CPU has no AVX512-BF16');
  const shapes = arg('shapes', '384x384,384x1536,1536x384').split(',').map((s) => s.split('x').map(Number) as [number, number]);
  const rowsList = arg('rows', '16,128,512,2048').split(',').map(Number);
  const threadsList = arg('threads', '1,2').split(',').map(Number);
  const ms = Number(arg('ms', '300'));
  const rounds = Number(arg('rounds', '2'));
  console.log('shape KxN   rows thr | ORT f32 Gemm us (cpu) GFLOP/s | bf16 us (cpu) GFLOP/s | speed-up | max rel diff');
  for (const [k, n] of shapes) {
    const w = seededUniform(n * k, k * 31 + n, 0.1);
    const bias = seededUniform(n, n, 0.1);
    const packed = native.bf16Pack(w, n, k);
    for (const threads of threadsList) {
      const g = new GraphBuilder('linear');
      const x = g.input('x', OnnxDataType.FLOAT, ['m', k]);
      const y = emitLinear(g, x, 'w', [{ kind: 'f32', shape: [n, k], data: w }], bias, k, { keepQuantized: false });
      g.output(g.op('Identity', [y]), OnnxDataType.FLOAT, ['m', n]);
      const session = SyncSession.create(g.build({ '': 23 }), { device: 'cpu', intraOpThreads: threads });
      const outName = Object.keys(session.run({ x: new ort.Tensor('float32', new Float32Array(k), [1, k]) }))[0];
      native.setThreads(threads);
      for (const m of rowsList) {
        const xs = seededUniform(m * k, m + k, 2);
        const feed = { x: new ort.Tensor('float32', xs, [m, k]) };
        const out = new Float32Array(m * n);
        const flops = 2 * m * n * k;
        const ortOut = session.run(feed)[outName].data as Float32Array;
        native.bf16Gemm(packed, xs, bias, out, m, n, k, BF16_ACTIVATION.none);
        const relDiff = maxRelDiff(out, ortOut);
        for (let round = 0; round < rounds; round++) {
          const a = timeCall(() => session.run(feed), ms);
          const b = timeCall(() => native.bf16Gemm(packed, xs, bias, out, m, n, k, BF16_ACTIVATION.none), ms);
          console.log(comparisonRow(k, n, m, threads, a, b, flops, relDiff));
        }
      }
      void session.release();
    }
  }
}

main();
