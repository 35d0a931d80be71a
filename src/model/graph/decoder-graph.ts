// Builds the llama/qwen2 decoder as an ONNX graph whose KV cache lives OUTSIDE the graph.
//
// Why this shape: onnxruntime-node wraps inputs without copying but copies every fetched output
// into a new JS buffer. So the runner owns the paged KV cache (one flat array per layer for K and
// for V, viewed as [numBlocks, blockSize*kvDim]) and feeds it as inputs; the graph gathers each
// sequence's past BLOCKS in block-table order (whole blocks: blockSize× fewer, contiguous copies
// than gathering slot rows), attends over past + new, and outputs only the logits rows asked for
// plus the new tokens' K/V (one tensor for all layers), which the runner scatters into its blocks.
//
// Inputs (B sequences, S new tokens each, NB past blocks each, padded; padding is masked):
//   input_ids [B,S] int64, position_ids [B,S] int64, past_blocks [B,NB] int64,
//   attn_mask [B,1,S,NB*blockSize+S] bool (true = may attend),
//   logits_rows [N] int64 (rows of B*S), cache_k.{l}, cache_v.{l} [numBlocks, blockSize*kvDim].
// Outputs: logits [N, vocab], new_kv [2*L*B, S, kvDim] (layer-major, K then V).
//
// Op choices, compared with onnxruntime-node 1.30 on one intra-op thread (best of N runs):
//   - Past gathered as whole blocks, not slot rows: stories260K decode at batch 64 / past 128
//     takes half the time per step (Gather of 128-byte rows is per-index bound).
//   - onnx Attention (opset 23) over 3D [B, T, heads*hd] K/V + Concat of the new K/V, versus
//     com.microsoft GroupQueryAttention over a Transpose'd BNSH past (one layer, decode, batch
//     1 to 64, past 128 to 512, head sizes 8 to 128): Attention was faster in 3 of the 4 shapes
//     (by 15-25%; GQA by 15% at B=32 hd 64) and keeps the flat cache layout, so it is used. At long
//     contexts decode is memory-bound on copying the past (Gather + Concat + Attention each pass
//     over it): ORT has no paged-attention kernel for CPU that could read the blocks in place.
//   - com.microsoft RotaryEmbedding with explicit position_ids (ragged positions per row; GQA's
//     built-in rotary needs head_size % 16 == 0, which stories260K's 8 is not).
//   - SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization: RMSNorm with the residual
//     add fused in; x*sigmoid(x) is fused by ORT into QuickGelu(alpha=1).
//   - fused QKV and gate/up projections: one GEMM each instead of three / two; Gemm(transB=1)
//     takes the [out, in] weights as stored (see linear.ts), MatMulNBits for GGML blocks.
//   - The same layer stack (decoderStack) also builds the pooling graph of a decoder served as an
//     embedder or classifier (--convert embed|classify): no KV cache, causal attention over the
//     batch's own tokens, and the pooling graph's I/O (pooling-graph.ts).
//   - Prefill chunks run one sequence per session.run: padding 4 x 64-token prompts of a 100M
//     model into one run saved only ~10% over one run each, and padding ragged prompts wastes
//     more than that, so the runner groups all decodes into one run and prefills separately.
//
// This graph is now the FALLBACK: when the native addon is built (npm install does it), the
// runner uses decoder-segments.ts instead, the same layers cut at attention with a native paged
// attention kernel (native/src/attention.cc) between the pieces. How attention at depth was
// chosen (onnxruntime-node 1.30, CPU ms per call on one thread, best of 4-7 interleaved runs, a
// shared 2-core machine; CPU time because wall time moved 3x with the machine's load):
//   one layer, decode, in-graph Gather + Concat + Attention  vs  native kernel reading in place
//     100M shape (12 heads, hd 64), batch 32, past 1024:   38.2 ms  vs  15.8 ms   (2.4x)
//     100M shape, batch 32, past 128:                       4.9 ms  vs   1.9 ms   (2.6x)
//     TinyLlama-1.1B shape (32/4 heads), batch 32, 1024:    24.1 ms  vs  10.5 ms   (2.3x)
//     1.1B shape, batch 1, past 1024:                      0.48 ms  vs  0.23 ms   (2.1x)
//     stories260K shape (8/4 heads, hd 8), batch 32, 512:   1.09 ms  vs  0.99 ms   (1.1x)
//   whole runner step, this graph vs segments + kernel (100M Q8_0, 12 layers):
//     decode batch 32 at context 1024:  470-496 ms vs 204-210 ms; batch 1 at 1024: 15.4 vs 12.6 ms;
//     prefill of 700 tokens: 602 vs 613 ms (MatMulNBits dominates; the kernel's causal tiles match
//     MLAS-backed Attention); stories260K: prefill 700 15.8 vs 18.9 ms (13 session.run calls per
//     step instead of 1 cost more than its tiny attention saves), decode b32@512 4.4 vs 4.2 ms.
//   In the profile (bench/profile.ts) of this graph at batch 32 / context 1024, Gather 36%,
//   Attention 31% and Concat 27% of the step; MatMulNBits 4%.
// Options measured or read and not taken:
//   - GroupQueryAttention / onnx Attention with a shared past/present buffer (slot-style
//     contiguous regions): ORT writes in place only into a caller's pre-allocated output, and
//     onnxruntime-node then copies every fetched output into a new JS buffer: the whole buffer
//     per layer per step (8 MB each: 48-60 ms, runtime-probe §3). A graph input is never reused
//     in place by ORT's planner, so without that output the op copies past into present.
//   - IO binding / device-located outputs: the 1.30 binding binds outputs only for WebGPU
//     ('gpu-buffer'); CPU outputs are always copied out (docs/cuda.md).
//   - A custom op inside the graph: the binding exposes no RegisterCustomOpsLibrary.
//   - WASM SIMD: no C-to-WASM toolchain is reachable from npm or Debian here, and a WASM kernel
//     would run the portable path's arithmetic at best; the native addon's portable path covers
//     machines without AVX2, and this graph covers machines without a compiler.
//   - A dequantized float32 (or float16) weight copy for large batches, beside MatMulNBits: one
//     2048 -> 5632 linear (TinyLlama's MLP) at batch 1 / 8 / 32 / 64 took 0.67 / 1.18 / 3.07 / 5.68
//     ms as MatMulNBits (Q8_0, int8 activations: AVX512-VNNI) against 1.91 / 3.18 / 6.12 / 8.98 ms
//     as Gemm float32 and the same as float16 (MLAS has no x86 fp16 GEMM; it casts). The int8
//     kernel wins at every batch size measured, so no second copy is kept.
//   - bfloat16 KV cache (--kv-cache-dtype bfloat16, native kernel only): halves the cache. It
//     first ran slower than float32 (stories260K b32 935 / 230 steps/s at context 128 / 1024, 100M
//     35.3 / 13.3) because the kernel staged each 16-key chunk of narrow rows into float buffers;
//     it now widens them in registers as it loads them (native/src/attention.cc has the table).
// Decode at depth (issue 16: batch 32 at context 1024 should keep half its context-128 rate).
// `npm run bench:forward -- --models stories260K,100m-gguf --contexts 128,1024 --batches 1,32
// --seconds 3` (add --kv-cache-dtype bfloat16), steps/s at ctx 128 / ctx 1024 and their ratio,
// before (main) and after interleaved under one lock, two rounds each:
//                      stories260K b32                 100M Q8_0 b32                b1 at ctx 1024
//   before, float32    1143 / 252, 1171 / 273  0.22    37.2 / 14.9, 39.4 / 15.7  0.40   stories 3724, 100M 94
//   after, float32     1311 / 579, 1391 / 620  0.45    42.6 / 25.0, 38.2 / 24.7  0.62   stories 3971, 100M 110
//   before, bfloat16   1039 / 234, 1044 / 226  0.22    36.6 / 13.4, 35.7 / 12.9  0.36   stories 3613, 100M 87
//   after, bfloat16    1385 / 620, 1339 / 541  0.43    43.7 / 27.2, 41.8 / 26.2  0.63   stories 4290, 100M 106
// (bfloat16 rounds under a load of 3-4 on the 2 cores; an earlier, quieter bfloat16 run gave
// stories 1138 / 588 = 0.52. b1 at ctx 128 moved within noise: stories 5451 -> 4970 and
// 5611 -> 5567, 100M 185 -> 178 and 196 -> 158.) Stories260K float32 stays under half: at head
// size 8 each (query, key) pair still costs about 6 cycles of reductions and exp. What changed:
// the kernel's threads follow the intra-op threads, and when those are unset (ORT's default:
// every core) every core too, where it used one; spans of 256 keys across blocks with one softmax
// rescale per span; no division per key; independent multiply-add chains in the V pass; all KV
// heads of a sequence in one decode item; narrow rows widened in registers. Those runs read a
// cache never written (untouched pages: the arithmetic, not memory). bench:forward now writes
// every row first; with it (one interleaved round, load ~3 on the 2 cores), b32 ctx 128 / 1024:
//   float32   before stories 807 / 144 = 0.18, 100M 22.7 / 5.1 = 0.22
//             after  stories 1004 / 261 = 0.26, 100M 30.0 / 11.0 = 0.37
//   bfloat16  before stories 997 / 201 = 0.20, 100M 20.5 / 4.5 = 0.22
//             after  stories 994 / 450 = 0.45, 100M 25.3 / 9.9 = 0.39
// There the 100M shape is bound by memory (2.4 GB of float32 K/V per step at b32/1024, ~21 GB/s
// on one thread); bfloat16 halved the bytes but, on a filled cache, read them at about 8 GB/s.
// That was the V pass (native/src/attention.cc: a row's head slice read in four passes, and an
// accumulator spilled with 16-bit rows); fixed, the kernel alone at 100M b32/1024 went from
// 149-155 to 96-108 CPU ms per step (bf16) and 127-129 to 87-91 (half), float32 within noise.
// Whole runner, same command, b32 ctx 1024 / ctx 128, before -> after (main's dist and addon
// against this one, interleaved under the lock; three rounds, the second under a load of 4-5 on
// the 2 cores, where every figure sank; the first round's "after" also advised huge pages for the
// cache, since dropped as unproven):
//   float32   stories 251 / 942 = 0.27 -> 281 / 1088 = 0.26;  122 / 717 = 0.17 -> 161 / 666 = 0.24;
//                     255 / 1067 = 0.24 -> 259 / 1064 = 0.24
//             100M 10.1 / 28.1 = 0.36 -> 10.1 / 30.3 = 0.33;   6.4 / 19.0 = 0.34 -> 6.5 / 16.1 = 0.40;
//                  9.6 / 28.1 = 0.34 -> 9.5 / 27.2 = 0.35
//   bfloat16  stories 403 / 1099 = 0.37 -> 441 / 1070 = 0.41; 252 / 834 = 0.30 -> 353 / 784 = 0.45;
//                     407 / 947 = 0.43 -> 422 / 1016 = 0.42
//             100M 9.9 / 23.4 = 0.42 -> 12.7 / 31.1 = 0.41;    5.1 / 17.5 = 0.29 -> 6.3 / 16.5 = 0.38;
//                  9.5 / 24.6 = 0.39 -> 11.0 / 27.8 = 0.39
// 100M b32 at ctx 1024 with bfloat16: +28%, +22%, +15%, but ctx 128 gained too (the kernel alone
// there: bf16 14-16 -> 10-11 ms, half 13-16 -> 8-9), so the ratio did not move; float32 within
// noise. Half (float16) rows take the same path but --kv-cache-dtype does not offer them yet.
// Then still under 0.5: 16-bit rows streamed at ~12 GB/s against float32's ~20, and stories260K's
// head size 8 was taken for arithmetic-bound.
// Second round (native/src/attention.cc has the kernel's tables): stories260K in the runner was
// bound by memory too (its cache, one per layer, is 44 MB as float32: out of the 32 MB LLC, where
// the kernel bench's two caches had sat), so decodes now prefetch each span's V rows during its K
// pass and the next span's K rows during its V pass; head size 8 scores eight keys per vector; and
// an AVX-512 build of the kernel runs 512-bit K and V passes at head sizes 16-64 (this machine is
// Zen 5). Kernel alone (node dist/bench/attention-kernel.js --contexts 128,1024, one thread, CPU
// ms per batch-32 step at ctx 1024), main -> this, two interleaved rounds:
//   stories260K  float32 5.83 / 5.14 -> 2.16 / 2.02, half 3.01 / 2.61 -> 1.96 / 1.66
//   100M         float32 120.7 / 111.5 -> 89.7 / 92.8, half 100.7 / 92.7 -> 77.1 / 77.8
// Whole runner, `node dist/bench/forward.js --models stories260K,100m-gguf --contexts 128,1024
// --batches 32 --seconds 3 [--kv-cache-dtype float16]`, steps/s at ctx 1024 / ctx 128, main ->
// this, interleaved under the lock; [the 1-minute load of the 2 cores]: the runner's two threads
// share them with other sessions, so its wall time moves with that load far more than the
// kernel-alone CPU time does:
//   with the prefetch only, two rounds:
//     float16  stories 300 / 973 = 0.31 -> 351 / 892 = 0.39;  304 / 991 = 0.31 -> 554 / 1326 = 0.42
//              100M 6.8 / 16.5 = 0.41 -> 14.9 / 34.6 = 0.43;   11.9 / 32.0 = 0.37 -> 15.1 / 35.3 = 0.43
//     float32  stories 275 / 1039 = 0.26 -> 451 / 1166 = 0.39 [2.4-3.0]
//              100M 9.6 / 27.3 = 0.35 -> 10.6 / 27.8 = 0.38 (float32 100M rows are not prefetched)
//   final (prefetch + keys across lanes + AVX-512), two rounds:
//     float16  stories 292 / 1171 = 0.25 -> 360 / 1129 = 0.32 [4.4-4.9];  407 / 1216 = 0.33 -> 475 / 1292 = 0.37 [1.8-1.9]
//              100M 7.9 / 20.0 = 0.39 -> 8.4 / 20.9 = 0.40 [4.4-4.9];      13.2 / 31.0 = 0.43 -> 13.1 / 28.7 = 0.46 [1.8-1.9]
//     float32  stories 309 / 1336 = 0.23 -> 450 / 1320 = 0.34 [3.0-4.2];  168 / 1059 = 0.16 -> 311 / 923 = 0.34 [1.8-3.5]
//              100M 10.8 / 29.0 = 0.37 -> 11.9 / 30.6 = 0.39 [3.0-4.2];    10.3 / 24.2 = 0.42 -> 8.0 / 20.0 = 0.40 [1.8-3.5]
// Still under 0.5 in the runner; the kernel alone says why. 100M float16: in the quieter round ctx
// 1024 added 41.5 ms per step over ctx 128 (76.3 against 34.8 ms) where the kernel adds 71 ms on
// one thread, 35.5 split evenly over two; under a load of 4-5 it added 71 ms (the helper thread
// got no core). 0.5 needs at most 34.8 ms added. stories260K float32 added 1.46 ms against 1.89
// of kernel time on one thread (0.95 on two). So what is left is mostly the kernel's second
// thread not getting the second core on this shared machine, then the 16-bit rows' bandwidth.
// The kernel alone with --threads 2 (100M half, ctx 1024, load 2.3-2.8) confirms it: 84-90 CPU ms
// and 85-91 wall ms per step, as with one thread; top -H showed the helper thread at ~47% and the
// caller at ~100%, taking turns on the one core the other sessions left, not running together.
import { GraphBuilder, BuiltModel, attrFloat, attrInt } from './graph-builder';
import { OnnxDataType } from './onnx-proto';
import { emitLinear, LinearOptions } from './linear';
import { attentionMask4d, declarePoolingInputs, emitPooled, poolHidden, positionRange } from './pooling-graph';
import { ropeTables } from './rope';
import { checkLinear, concatF32, requireWeight, toF32 } from './weights';
import { castTo, weightInitializer } from './compute-dtype';
import { DecoderArchConfig, ModelOutput, ModelWeights, WeightTensor } from '../types';

export const DecoderInputs = {
  inputIds: 'input_ids',
  positionIds: 'position_ids',
  pastBlocks: 'past_blocks',
  attnMask: 'attn_mask',
  logitsRows: 'logits_rows',
  cacheK: (layer: number) => `cache_k.${layer}`,
  cacheV: (layer: number) => `cache_v.${layer}`,
} as const;

export const DecoderOutputs = { logits: 'logits', newKv: 'new_kv' } as const;

export interface DecoderGraphOptions extends LinearOptions {
  /** Rows of the RoPE tables = the largest position + 1 the graph can see. */
  maxPositions: number;
  /** Tokens per KV block (the cache inputs are [numBlocks, blockSize * kvDim]). */
  blockSize: number;
}

export function buildDecoderGraph(config: DecoderArchConfig, weights: ModelWeights, opts: DecoderGraphOptions): BuiltModel {
  const c = config;
  const g = new GraphBuilder(`${c.architecture}-decoder`);
  const f32 = OnnxDataType.FLOAT;
  const i64 = OnnxDataType.INT64;
  const kvDim = c.numKvHeads * c.headDim;

  const inputIds = g.input(DecoderInputs.inputIds, i64, ['batch', 'seq']);
  const positionIds = g.input(DecoderInputs.positionIds, i64, ['batch', 'seq']);
  const pastBlocks = g.input(DecoderInputs.pastBlocks, i64, ['batch', 'past_blocks']);
  const pastRowsShape = g.constInt64([0, -1, kvDim]);
  const attnMask = g.input(DecoderInputs.attnMask, OnnxDataType.BOOL, ['batch', 1, 'seq', 'total']);
  const logitsRows = g.input(DecoderInputs.logitsRows, i64, ['rows']);
  const newKv: string[] = [];

  // Weights and activations in --dtype; the KV cache and the logits stay f32 at the edges.
  const dtype = opts.dtype ?? 'float32';
  const stack = decoderStack(g, c, weights, opts, inputIds, positionIds, (l, qRot, kRot, v3) => {
    newKv.push(castTo(g, kRot, dtype, 'float32'), castTo(g, v3, dtype, 'float32'));
    const blockElems = opts.blockSize * kvDim;
    const past = (cache: string) =>
      castTo(g, g.op('Reshape', [g.op('Gather', [g.input(cache, f32, ['blocks', blockElems]), pastBlocks], { axis: attrInt(0) }), pastRowsShape]), 'float32', dtype);
    const keys = g.op('Concat', [past(DecoderInputs.cacheK(l)), kRot], { axis: attrInt(1) });
    const values = g.op('Concat', [past(DecoderInputs.cacheV(l)), v3], { axis: attrInt(1) });
    return g.op('Attention', [qRot, keys, values, attnMask], { q_num_heads: attrInt(c.numHeads), kv_num_heads: attrInt(c.numKvHeads) });
  });

  g.node('Concat', newKv, [DecoderOutputs.newKv], { axis: attrInt(0) });
  g.output(DecoderOutputs.newKv, f32, ['kv_rows', 'seq', kvDim]);

  const embedName = 'model.embed_tokens.weight';
  const picked = g.op('Gather', [stack.hidden, logitsRows], { axis: attrInt(0) });
  const untied = !c.tieWordEmbeddings && weights.has('lm_head.weight');
  const headTensor = untied ? requireWeight(weights, 'lm_head.weight') : stack.embedTensor;
  checkLinear(untied ? 'lm_head.weight' : embedName, headTensor, c.hiddenSize, c.vocabSize);
  // A tied f32 head shares the embedding Gather's initializer: Gemm(transB) reads [vocab, hidden]
  // as is. A quantized one (tied or not) stays quantized via emitLinear.
  const logits =
    untied || (headTensor.kind === 'quantized' && opts.keepQuantized)
      ? emitLinear(g, picked, untied ? 'lm_head.weight' : 'lm_head.tied.weight', [headTensor], null, c.hiddenSize, opts)
      : g.op('Gemm', [picked, stack.embed], { transB: attrInt(1) });
  g.node('Identity', [castTo(g, logits, dtype, 'float32')], [DecoderOutputs.logits]);
  g.output(DecoderOutputs.logits, f32, ['rows', c.vocabSize]);

  return g.build({ '': 23, 'com.microsoft': 1 });
}

/**
 * The decoder as a pooling graph (I/O: pooling-graph.ts): causal attention over each padded
 * sequence, the final normed hidden states pooled per sequence, then for 'classifier' the
 * `score` head of *ForSequenceClassification checkpoints (no bias).
 */
export function buildDecoderPoolingGraph(
  config: DecoderArchConfig,
  weights: ModelWeights,
  output: ModelOutput,
  opts: LinearOptions & { maxPositions: number },
): BuiltModel {
  const c = config;
  if (output.kind === 'logits' || output.kind === 'transcription') throw new Error('buildDecoderPoolingGraph builds pooling graphs only');
  const g = new GraphBuilder(`${c.architecture}-pooling`);
  // Pooling graphs compute in float32 (--dtype float16 applies to generation).
  opts = { ...opts, dtype: 'float32' };
  const inputs = declarePoolingInputs(g);
  const positions = g.op('Expand', [g.op('Unsqueeze', [positionRange(g, inputs.seqLen, 0), g.constInt64([0])]), g.op('Shape', [inputs.inputIds])]);
  const mask = attentionMask4d(g, inputs, true);
  const stack = decoderStack(g, c, weights, opts, inputs.inputIds, positions, (_l, qRot, kRot, v3) =>
    g.op('Attention', [qRot, kRot, v3, mask], { q_num_heads: attrInt(c.numHeads), kv_num_heads: attrInt(c.numKvHeads) }),
  );
  const pooled = poolHidden(g, inputs, stack.hidden, c.hiddenSize);
  if (output.kind === 'pooled') {
    emitPooled(g, pooled, c.hiddenSize);
  } else {
    const score = requireWeight(weights, 'score.weight');
    checkLinear('score.weight', score, c.hiddenSize, output.numLabels);
    emitPooled(g, emitLinear(g, pooled, 'score.weight', [score], null, c.hiddenSize, opts), output.numLabels);
  }
  return g.build({ '': 23, 'com.microsoft': 1 });
}

/** Attention of one layer over RoPE'd [B,S,·] q/k and v; returns [B,S,heads*headDim]. */
type Attend = (layer: number, qRot: string, kRot: string, v3: string) => string;

/**
 * Embedding, every layer and the final RMSNorm, in the flat [B*S, hidden] stream; `attend` is
 * the only part that differs between the KV-cached graph and the pooling one.
 */
function decoderStack(
  g: GraphBuilder,
  c: DecoderArchConfig,
  weights: ModelWeights,
  opts: LinearOptions & { maxPositions: number },
  inputIds: string,
  positionIds: string,
  attend: Attend,
): { hidden: string; embed: string; embedTensor: WeightTensor } {
  const dtype = opts.dtype ?? 'float32';
  const weight = (name: string, dims: number[], values: Float32Array) => weightInitializer(g, dtype, name, dims, values);
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const layerPrefix = (l: number) => `model.layers.${l}.`;

  // Shapes used to move between the flat [B*S, hidden] stream and [B, S, features] for attention.
  const flatShape = g.constInt64([-1]);
  const batchSeq = g.op('Shape', [inputIds]);
  const batchSeqAny = g.op('Concat', [batchSeq, g.constInt64([-1])], { axis: attrInt(0) });
  const embedName = 'model.embed_tokens.weight';
  const embedTensor = requireWeight(weights, embedName);
  if (embedTensor.shape[0] !== c.vocabSize || embedTensor.shape[1] !== c.hiddenSize) {
    throw new Error(`'${embedName}' has shape [${embedTensor.shape.join(', ')}], expected [${c.vocabSize}, ${c.hiddenSize}]`);
  }
  const embed = weight(embedName, [c.vocabSize, c.hiddenSize], toF32(embedTensor));
  const hidden0 = g.op('Gather', [embed, g.op('Reshape', [inputIds, flatShape])], { axis: attrInt(0) });

  const { cos, sin } = ropeTables(c, opts.maxPositions);
  const cosCache = weight('rope.cos', [opts.maxPositions, c.headDim / 2], cos);
  const sinCache = weight('rope.sin', [opts.maxPositions, c.headDim / 2], sin);

  const norm = (name: string) => weight(name, [c.hiddenSize], toF32(requireWeight(weights, name)));
  const eps = attrFloat(c.rmsNormEps);

  let normed = g.op('SimplifiedLayerNormalization', [hidden0, norm(`${layerPrefix(0)}input_layernorm.weight`)], {
    axis: attrInt(-1),
    epsilon: eps,
  });
  let residual = hidden0;

  for (let l = 0; l < c.numLayers; l++) {
    const p = layerPrefix(l);
    const attnParts = ['q_proj', 'k_proj', 'v_proj'].map((n) => {
      const name = `${p}self_attn.${n}.weight`;
      const t = requireWeight(weights, name);
      checkLinear(name, t, c.hiddenSize, n === 'q_proj' ? qDim : kvDim);
      return t;
    });
    const qkvBias = c.attentionBias
      ? concatF32(['q_proj', 'k_proj', 'v_proj'].map((n) => toF32(requireWeight(weights, `${p}self_attn.${n}.bias`))))
      : null;
    const qkv = emitLinear(g, normed, `${p}self_attn.qkv_proj.weight`, attnParts, qkvBias, c.hiddenSize, opts);
    const [q, k, v] = g.node('Split', [qkv, g.constInt64([qDim, kvDim, kvDim])], 3, { axis: attrInt(1) });
    const to3d = (x: string) => g.op('Reshape', [x, batchSeqAny]);
    const rotary = (x: string, heads: number) =>
      g.op('RotaryEmbedding', [to3d(x), positionIds, cosCache, sinCache], { num_heads: attrInt(heads) }, 'com.microsoft');
    const attn = attend(l, rotary(q, c.numHeads), rotary(k, c.numKvHeads), to3d(v));
    const oName = `${p}self_attn.o_proj.weight`;
    const oWeight = requireWeight(weights, oName);
    checkLinear(oName, oWeight, qDim, c.hiddenSize);
    const attnOut = emitLinear(g, g.op('Reshape', [attn, g.constInt64([-1, qDim])]), oName, [oWeight], null, qDim, opts);

    const [normed2, , , residual2] = g.node(
      'SkipSimplifiedLayerNormalization',
      [attnOut, residual, norm(`${p}post_attention_layernorm.weight`)],
      ['', '', '', ''].map(() => g.fresh('skipnorm')),
      { epsilon: eps },
      'com.microsoft',
    );

    const gateUp = ['gate_proj', 'up_proj'].map((n) => {
      const name = `${p}mlp.${n}.weight`;
      const t = requireWeight(weights, name);
      checkLinear(name, t, c.hiddenSize, c.intermediateSize);
      return t;
    });
    const gu = emitLinear(g, normed2, `${p}mlp.gate_up_proj.weight`, gateUp, null, c.hiddenSize, opts);
    const [gate, up] = g.node('Split', [gu, g.constInt64([c.intermediateSize, c.intermediateSize])], 2, {
      axis: attrInt(1),
    });
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    const downName = `${p}mlp.down_proj.weight`;
    const down = requireWeight(weights, downName);
    checkLinear(downName, down, c.intermediateSize, c.hiddenSize);
    const mlpOut = emitLinear(g, act, downName, [down], null, c.intermediateSize, opts);

    const nextNorm = l + 1 < c.numLayers ? `${layerPrefix(l + 1)}input_layernorm.weight` : 'model.norm.weight';
    const outs = g.node(
      'SkipSimplifiedLayerNormalization',
      [mlpOut, residual2, norm(nextNorm)],
      [0, 1, 2, 3].map(() => g.fresh('skipnorm')),
      { epsilon: eps },
      'com.microsoft',
    );
    normed = outs[0];
    residual = outs[3];
  }

  return { hidden: normed, embed, embedTensor };
}
