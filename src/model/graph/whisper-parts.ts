// Graph pieces both Whisper graphs share, over Hugging Face's tensor names: LayerNorm, linear
// layers with biases, the fused q/k/v projection (k_proj has no bias: its part of the fused bias
// is zero), the GELU feed-forward block. Activations are [rows, d_model] (2-D) unless noted.

import { attrFloat, attrInt, GraphBuilder } from './graph-builder';
import { emitLinear, LinearOptions } from './linear';
import { OnnxDataType } from './onnx-proto';
import { checkLinear, concatF32, requireWeight, toF32 } from './weights';
import type { ModelWeights } from '../types';

/** Cross-attention positions rounded up to whole KV blocks (the padding is masked out). */
export function paddedCrossPositions(positions: number, blockSize: number): number {
  return Math.ceil(positions / blockSize) * blockSize;
}

export class WhisperGraphParts {
  constructor(
    readonly g: GraphBuilder,
    private readonly weights: ModelWeights,
    private readonly opts: LinearOptions,
    readonly dModel: number,
    private readonly layerNormEps: number,
  ) {}

  vector(name: string, length: number): Float32Array {
    const tensor = requireWeight(this.weights, name);
    if (tensor.shape.length !== 1 || tensor.shape[0] !== length) {
      throw new Error(`weight '${name}' has shape [${tensor.shape.join(', ')}], expected [${length}]`);
    }
    return toF32(tensor);
  }

  layerNorm(x: string, prefix: string): string {
    const d = this.dModel;
    const gain = this.g.initializer(`${prefix}.weight`, OnnxDataType.FLOAT, [d], this.vector(`${prefix}.weight`, d));
    const bias = this.g.initializer(`${prefix}.bias`, OnnxDataType.FLOAT, [d], this.vector(`${prefix}.bias`, d));
    return this.g.op('LayerNormalization', [x, gain, bias], { axis: attrInt(-1), epsilon: attrFloat(this.layerNormEps) });
  }

  /** `prefix`.weight [out, in] (and `prefix`.bias when `bias`). */
  linear(x: string, prefix: string, inDim: number, outDim: number, bias = true): string {
    const weight = requireWeight(this.weights, `${prefix}.weight`);
    checkLinear(`${prefix}.weight`, weight, inDim, outDim);
    return emitLinear(this.g, x, `${prefix}.weight`, [weight], bias ? this.vector(`${prefix}.bias`, outDim) : null, inDim, this.opts);
  }

  /** Several [d, d] projections of the same input in one GEMM, side by side: [rows, n·d] (k_proj parts get a zero bias). */
  fusedLinear(x: string, name: string, prefixes: readonly string[]): string {
    const d = this.dModel;
    const parts = prefixes.map((p) => {
      const weight = requireWeight(this.weights, `${p}.weight`);
      checkLinear(`${p}.weight`, weight, d, d);
      return weight;
    });
    const biases = prefixes.map((p) => (p.endsWith('.k_proj') ? new Float32Array(d) : this.vector(`${p}.bias`, d)));
    return emitLinear(this.g, x, name, parts, concatF32(biases), d, this.opts);
  }

  /** fusedLinear split back into one [rows, d] value per projection. */
  fusedProjections(x: string, name: string, prefixes: readonly string[]): string[] {
    const fused = this.fusedLinear(x, name, prefixes);
    return this.g.node('Split', [fused, this.g.constInt64(prefixes.map(() => this.dModel))], prefixes.length, { axis: attrInt(1) });
  }

  /** fc2(gelu(fc1(x))) of layer `prefix`. */
  feedForward(x: string, prefix: string, ffnDim: number): string {
    const hidden = this.g.op('Gelu', [this.linear(x, `${prefix}.fc1`, this.dModel, ffnDim)]);
    return this.linear(hidden, `${prefix}.fc2`, ffnDim, this.dModel);
  }

  /** Multi-head attention of [batch, q_len, d] queries over [batch, kv_len, d] keys/values (no mask), [batch, q_len, d]. */
  attention(q: string, k: string, v: string, heads: number, mask?: string): string {
    return this.g.op('Attention', mask ? [q, k, v, mask] : [q, k, v], { q_num_heads: attrInt(heads), kv_num_heads: attrInt(heads) });
  }
}
