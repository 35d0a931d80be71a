// The MoE feed-forward block of the native-q8 backend: the float32 router (the f32 addon's GEMM
// where it is built, else a plain loop), the rows grouped by expert (moe/routing.ts), then per
// expert one Q8_0 GEMM over all the rows that chose it (gate_up, SiLU * up, down), so each
// expert's weights are read once per pass; the outputs are scatter-added, weighted, per row.
// Why grouped: a decode step of 32 sequences with top-4 of 32 experts reads each chosen expert
// once for all its rows instead of once per row (llama.cpp's mul_mat_id groups the same way).
import { routeRows } from '../../moe/routing';
import type { NativeKernels } from '../native-kernels';
import type { F32Addon } from './native-f32';
import type { PackedQ8 } from './q8-weights';

/** One expert's packed linears: gate_up [2 * ffn, hidden] and down [hidden, ffn]. */
export interface PackedExpert {
  gateUp: PackedQ8;
  down: PackedQ8;
}

export class Q8MoeBlock {
  private readonly packedRouter: Float32Array | null;

  constructor(
    private readonly native: NativeKernels,
    private readonly f32: F32Addon | null,
    private readonly experts: readonly PackedExpert[],
    private readonly router: Float32Array,
    private readonly perToken: number,
    private readonly renormalise: boolean,
  ) {
    const { n, k } = experts[0].gateUp;
    if (router.length !== experts.length * k || n % 2) throw new Error(`MoE block: router of ${router.length} values for ${experts.length} experts of width ${k}`);
    this.packedRouter = f32 ? f32.f32Pack(router, experts.length, k) : null;
  }

  /** out [rows, hidden] = the block over x [rows, hidden] (the post-attention-normed rows). */
  run(x: Float32Array, out: Float32Array, rows: number): void {
    const { native, experts } = this;
    const h = experts[0].gateUp.k;
    const ffn = experts[0].gateUp.n / 2;
    const groups = routeRows(this.routerLogits(x, rows, h), rows, experts.length, this.perToken, this.renormalise);
    const total = rows * this.perToken;
    const gathered = new Float32Array(total * h);
    for (let i = 0; i < total; i++) gathered.set(x.subarray(groups.rows[i] * h, (groups.rows[i] + 1) * h), i * h);
    const gu = new Float32Array(total * 2 * ffn);
    const act = new Float32Array(total * ffn);
    const y = new Float32Array(total * h);
    for (let e = 0; e < experts.length; e++) {
      const from = groups.starts[e];
      const m = groups.starts[e + 1] - from;
      if (m === 0) continue;
      const guRows = gu.subarray(from * 2 * ffn, (from + m) * 2 * ffn);
      const actRows = act.subarray(from * ffn, (from + m) * ffn);
      native.q8Gemm(experts[e].gateUp.packed, gathered.subarray(from * h, (from + m) * h), guRows, m, 2 * ffn, h);
      native.siluMul(guRows, actRows, ffn);
      native.q8Gemm(experts[e].down.packed, actRows, y.subarray(from * h, (from + m) * h), m, h, ffn);
    }
    out.fill(0, 0, rows * h);
    for (let i = 0; i < total; i++) {
      const at = groups.rows[i] * h;
      const w = groups.weights[i];
      for (let d = 0; d < h; d++) out[at + d] += w * y[i * h + d];
    }
    native.free(gathered, gu, act, y);
  }

  /** Router logits [rows, experts] in float32. */
  private routerLogits(x: Float32Array, rows: number, h: number): Float32Array {
    const count = this.experts.length;
    const logits = new Float32Array(rows * count);
    if (this.f32 && this.packedRouter) {
      this.f32.f32Gemm(this.packedRouter, x.subarray(0, rows * h), logits, rows, count, h);
      return logits;
    }
    for (let r = 0; r < rows; r++) {
      for (let e = 0; e < count; e++) {
        let sum = 0;
        for (let d = 0; d < h; d++) sum += x[r * h + d] * this.router[e * h + d];
        logits[r * count + e] = sum;
      }
    }
    return logits;
  }
}
