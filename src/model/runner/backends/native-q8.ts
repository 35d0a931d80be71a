// A pass wholly in the addon for a llama-family model whose linears are all Q8_0: the linears in
// its Q8_0 GEMM (native/src/q8-gemm.cc: AVX512-VNNI, or AVX2), RoPE and SiLU(gate) * up (gemma:
// GELU(gate) * up) beside it, and the RMSNorms with their residual adds (native/src/rms-norm.cc;
// gemma's sandwich norms too); no onnxruntime session runs.
// Why: MatMulNBits ran 1.2-3.5x slower, and each norm segment's session run cost most of what a
// batch-1 step had left (docs/perf/q8-gemm.md, docs/perf/segmented-runner.md).
import { rotaryDimOf } from '../../graph/rope';
import type { DecoderLayerOptions } from '../../graph/layer-options';
import type { DecoderArchConfig } from '../../types';
import type { NativeKernels } from '../native-kernels';
import { attendLayer } from './attend';
import type { BackendContext, DecoderBackend, KvView, PassRows } from './decoder-backend';
import { pickRows } from './pick-rows';
import { LoraDeltas } from './lora-delta';
import { f32Addon } from './native-f32';
import { Q8MoeBlock } from './q8-moe-block';
import { readQ8Linears, type PackedQ8, type Q8Layer, type Q8Weight, type RmsNorms } from './q8-weights';
import { layerRopeRows } from './rope-rows';

/**
 * How long the addon's pool spins between calls on this path, whose step is all addon calls
 * (~100 a step at batch 1, tens of microseconds apart): a futex wake-up per call cost about what
 * splitting it saved (docs/perf/thread-pool.md).
 */
const Q8_POOL_SPIN_MICROS = 100;

export function createNativeQ8(ctx: BackendContext): DecoderBackend {
  const config = ctx.config as DecoderArchConfig;
  const linears = readQ8Linears(config, ctx.weights);
  // Reading the norms is not a copy to release: they stay the model's.
  ctx.weights.forgetReads();
  const pack = (w: Q8Weight): PackedQ8 => ({ packed: ctx.native.q8Pack(w.codes, w.scales, w.n, w.k), n: w.n, k: w.k });
  const layers: PackedLayer[] = [];
  const f32 = f32Addon();
  for (let l = 0; l < config.numLayers; l++) {
    const w = linears.layer(l);
    const mlp =
      'experts' in w.mlp
        ? new Q8MoeBlock(ctx.native, f32, w.mlp.experts.map((e) => ({ gateUp: pack(e.gateUp), down: pack(e.down) })), w.mlp.router, config.numExpertsPerToken!, config.normTopKProb ?? false)
        : { gateUp: pack(w.mlp.gateUp), down: pack(w.mlp.down) };
    layers.push({ q: pack(w.q), k: pack(w.k), v: pack(w.v), o: pack(w.o), mlp });
    ctx.weights.releaseRead();
  }
  const head = pack(linears.head());
  ctx.weights.releaseRead();
  return new NativeQ8(config, ctx.native, ctx.decoder.layers, layers, head, linears.norms);
}

/** A layer as the backend runs it: its packed linears, and a dense MLP or a MoE block. */
type PackedLayer = Omit<Q8Layer<PackedQ8>, 'mlp'> & { mlp: { gateUp: PackedQ8; down: PackedQ8 } | Q8MoeBlock };

class NativeQ8 implements DecoderBackend {
  readonly name = 'native-q8';
  readonly poolSpinMicros = Q8_POOL_SPIN_MICROS;

  constructor(
    private readonly config: DecoderArchConfig,
    private readonly native: NativeKernels,
    private readonly options: readonly DecoderLayerOptions[],
    private readonly layers: PackedLayer[],
    private readonly head: PackedQ8,
    private readonly norms: RmsNorms,
  ) {}

  run(pass: PassRows, residual: Float32Array, kv: KvView, logitsBuffer: (length: number) => Float32Array): Float32Array {
    const c = this.config;
    const n = pass.rows;
    const h = c.hiddenSize;
    // The dense MLPs' width (0 when every layer is MoE: no dense buffers).
    const dense = this.layers.find((l) => !(l.mlp instanceof Q8MoeBlock))?.mlp as { down: PackedQ8 } | undefined;
    const inter = dense?.down.k ?? 0;
    const { norms, native } = this;
    const gemm = (w: PackedQ8, x: Float32Array, y: Float32Array, rows = n) => native.q8Gemm(w.packed, x, y, rows, w.n, w.k);
    const ropes = layerRopeRows(this.options, pass.positions, pass.ropePositions);
    // One buffer each for the pass, reused by every layer; the embedded rows are the residual,
    // which addRmsNorm adds each sublayer's output into.
    const q = new Float32Array(n * c.numHeads * c.headDim);
    const k = new Float32Array(n * c.numKvHeads * c.headDim);
    const v = new Float32Array(k.length);
    // q/k norm reads the projections here and writes q and k (addRmsNorm's out must not overlap its input).
    const qRaw = norms.qk ? new Float32Array(q.length) : q;
    const kRaw = norms.qk ? new Float32Array(k.length) : k;
    const attn = new Float32Array(q.length);
    const projected = new Float32Array(n * h);
    const normed = new Float32Array(n * h);
    const gateUp = new Float32Array(n * 2 * inter);
    const act = new Float32Array(n * inter);
    // Sandwich norms: a sublayer's normed output, before addRmsNorm adds it into the residual.
    const sublayerOut = norms.sandwich ? new Float32Array(n * h) : projected;
    // The adapters' products after each adapted linear (lora-delta.ts), where the pass has adapter rows.
    const lora = pass.lora ? new LoraDeltas(pass.lora, this.native) : null;
    const gated = c.hiddenActivation === 'gelu_tanh' ? native.geluTanhMul.bind(native) : native.siluMul.bind(native);
    /** residual += the sublayer's output (normed by `outNorm` where there is one), then normed = norm(residual) * `next`. */
    const addSublayer = (outNorm: Float32Array | null, next: Float32Array) => {
      if (outNorm) native.addRmsNorm(null, projected, outNorm, sublayerOut, norms.eps);
      native.addRmsNorm(sublayerOut, residual, next, normed, norms.eps);
    };
    native.addRmsNorm(null, residual, norms.input[0], normed, norms.eps);
    for (let l = 0; l < c.numLayers; l++) {
      const layer = this.layers[l];
      gemm(layer.q, normed, qRaw);
      gemm(layer.k, normed, kRaw);
      gemm(layer.v, normed, v);
      if (lora) {
        lora.add(l, 'q_proj', normed, qRaw);
        lora.add(l, 'k_proj', normed, kRaw);
        lora.add(l, 'v_proj', normed, v);
      }
      if (norms.qk) {
        native.addRmsNorm(null, qRaw, norms.qk[l].q, q, norms.eps);
        native.addRmsNorm(null, kRaw, norms.qk[l].k, k, norms.eps);
      }
      const rope = ropes[l];
      if (rope) {
        native.rope(q, rope.cos, rope.sin, c.numHeads, c.headDim, rotaryDimOf(c));
        native.rope(k, rope.cos, rope.sin, c.numKvHeads, c.headDim, rotaryDimOf(c));
      }
      native.writeKv(k, v, kv.keys[l], kv.values[l], pass.layerSlots[l], kv.kvCode);
      attendLayer(native, q, attn, kv, l, pass, this.options[l].attention);
      gemm(layer.o, attn, projected);
      lora?.add(l, 'o_proj', attn, projected);
      const sandwich = norms.sandwich?.[l];
      if (sandwich) addSublayer(norms.post[l], sandwich.preMlp);
      else addSublayer(null, norms.post[l]);
      if (layer.mlp instanceof Q8MoeBlock) {
        layer.mlp.run(normed, projected, n);
      } else {
        gemm(layer.mlp.gateUp, normed, gateUp);
        lora?.add(l, 'gate_proj', normed, gateUp, { stride: 2 * inter, offset: 0 });
        lora?.add(l, 'up_proj', normed, gateUp, { stride: 2 * inter, offset: inter });
        gated(gateUp, act, inter);
        gemm(layer.mlp.down, act, projected);
        lora?.add(l, 'down_proj', act, projected);
      }
      addSublayer(sandwich?.postMlp ?? null, l === c.numLayers - 1 ? norms.final : norms.input[l + 1]);
    }
    const picked = pickRows(normed, pass.logitsRows, h);
    const rows = pass.logitsRows.length;
    const logits = logitsBuffer(rows * c.vocabSize);
    gemm(this.head, picked, logits, rows);
    const cap = c.finalLogitSoftcap;
    if (cap) for (let i = 0; i < logits.length; i++) logits[i] = cap * Math.tanh(logits[i] / cap);
    native.free(q, k, v, attn, projected, gateUp, act, residual, normed);
    if (norms.sandwich) native.free(sublayerOut);
    if (norms.qk) native.free(qRaw, kRaw);
    if (picked !== normed) native.free(picked);
    return logits;
  }

  release(): Promise<void> {
    return Promise.resolve();
  }
}
