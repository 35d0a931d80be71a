// The decoder's layers as onnxruntime sessions, one per segment between two attentions
// (graph/decoder-segments.ts), with the native paged-attention kernel between them reading each
// sequence's past K/V in place. Every model the segmented runner takes can run here: the fallback
// where no native path applies, and the only one on CUDA (the session keeps the linears there).
import * as ort from 'onnxruntime-node';
import { SegmentInputs, SegmentOutputs, segmentParts } from '../../graph/decoder-segments';
import type { DecoderArchConfig, ModelArchConfig } from '../../types';
import type { NativeKernels } from '../native-kernels';
import { SyncSession } from '../session';
import type { DecoderLayerOptions } from '../../graph/layer-options';
import { attendLayer } from './attend';
import type { BackendContext, DecoderBackend, KvView, PassRows } from './decoder-backend';
import { OnnxLoraFeeds } from './onnx-lora-feeds';
import { layerRopeRows, type RopeRows } from './rope-rows';

export async function createOnnxSegments(ctx: BackendContext): Promise<DecoderBackend> {
  const sessions: SyncSession[] = [];
  try {
    // One segment at a time: only one segment's transient weight copies exist at once.
    for (let i = 0; i < ctx.decoder.count; i++) {
      sessions.push(SyncSession.create(ctx.decoder.build(i, ctx.lora), { device: ctx.device, intraOpThreads: ctx.intraOpThreads }));
      // The session holds its own copy now.
      ctx.weights.releaseRead();
    }
  } catch (err) {
    await Promise.all(sessions.map((s) => s.release()));
    throw err;
  }
  const lora = ctx.lora ? new OnnxLoraFeeds(ctx.lora, ctx.config as DecoderArchConfig, sessions.map((s) => s.inputNames)) : null;
  return new OnnxSegments(ctx.config, sessions, ctx.native, ctx.decoder.layers, lora);
}

class OnnxSegments implements DecoderBackend {
  readonly name = 'onnx-segments';
  readonly poolSpinMicros = 0;
  private rowPositions = new BigInt64Array(0);

  constructor(
    private readonly config: ModelArchConfig,
    private readonly sessions: SyncSession[],
    private readonly native: NativeKernels,
    private readonly layers: readonly DecoderLayerOptions[],
    /** The segments' LoRA inputs, where they were built with them (BackendContext.lora). */
    private readonly lora: OnnxLoraFeeds | null,
  ) {}

  run(pass: PassRows, hidden: Float32Array, kv: KvView): Float32Array {
    const c = this.config;
    const n = pass.rows;
    // One set of feeds per distinct RoPE table, shared by its layers.
    const ropeFeeds = new Map<RopeRows | null, Record<string, ort.Tensor>>();
    const ropes = layerRopeRows(this.layers, pass.positions, pass.ropePositions).map((rows) => {
      if (!ropeFeeds.has(rows)) ropeFeeds.set(rows, this.ropeFeeds(rows, n));
      return ropeFeeds.get(rows)!;
    });
    const qDim = c.numHeads * c.headDim;
    const attn = new Float32Array(n * qDim);
    const attnTensor = new ort.Tensor('float32', attn, [n, qDim]);
    /** Segment i's LoRA feeds (the mask and its stacked pairs), where its graph takes them. */
    const loraFeeds = this.lora?.passFeeds(pass) ?? (() => ({}));
    // Each run's outputs are new buffers (onnxruntime-node copies them out); they are freed as
    // soon as they are dead rather than left to the collector (docs/perf/segmented-runner.md, "Memory").
    for (let l = 0; l < c.numLayers; l++) {
      const feeds: Record<string, ort.Tensor> = { ...ropes[l], ...loraFeeds(l), [SegmentInputs.hidden]: new ort.Tensor('float32', hidden, [n, c.hiddenSize]) };
      if (l > 0) feeds[SegmentInputs.attn] = attnTensor;
      const packed = this.sessions[l].run(feeds)[SegmentOutputs.packed].data as Float32Array;
      const out = segmentParts(c, packed, n);
      if (l > 0) {
        // The run consumed the previous residual: its buffer (the previous packed output, or the embedded rows) is dead.
        this.native.free(hidden);
        hidden = out.residual;
      }
      this.native.writeKv(out.k, out.v, kv.keys[l], kv.values[l], pass.layerSlots[l], kv.kvCode);
      attendLayer(this.native, out.q, attn, kv, l, pass, this.layers[l].attention);
      // q, k and v are dead now; from segment 1 their buffer holds the residual too, freed after the next run.
      if (l === 0) this.native.free(packed);
    }
    const last = this.sessions[c.numLayers].run({
      ...loraFeeds(c.numLayers),
      [SegmentInputs.hidden]: new ort.Tensor('float32', hidden, [n, c.hiddenSize]),
      [SegmentInputs.attn]: attnTensor,
      [SegmentInputs.logitsRows]: new ort.Tensor('int64', pass.logitsRows, [pass.logitsRows.length]),
    });
    this.native.free(hidden, attn);
    return last[SegmentOutputs.logits].data as Float32Array;
  }

  async release(): Promise<void> {
    await Promise.all(this.sessions.map((s) => s.release()));
  }

  /** A layer's cos/sin rows of the pass (row i = position of row i) and positions 0..n-1 into them. */
  private ropeFeeds(rows: RopeRows | null, n: number): Record<string, ort.Tensor> {
    if (!rows) return {};
    const half = rows.cos.length / n;
    if (this.rowPositions.length < n) this.rowPositions = BigInt64Array.from({ length: Math.max(n, 2 * this.rowPositions.length) }, (_, i) => BigInt(i));
    return {
      [SegmentInputs.ropeCos]: new ort.Tensor('float32', rows.cos, [n, half]),
      [SegmentInputs.ropeSin]: new ort.Tensor('float32', rows.sin, [n, half]),
      [SegmentInputs.ropePositions]: new ort.Tensor('int64', this.rowPositions.subarray(0, n), [1, n]),
    };
  }
}
