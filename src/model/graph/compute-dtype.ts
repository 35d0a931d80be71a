// The weight and activation type of the built decoder graph (--dtype). float32 is the default:
// onnxruntime's CPU kernels are fastest there at batch sizes > 1. float16 stores every
// non-quantized weight in half precision (half the session's weight memory) and runs the
// activations in float16; the KV cache inputs/outputs and the logits stay float32 (cast at the
// graph's edges), and GGML-quantized matmuls keep float32 activations.

import { f32ArrayToF16 } from '../gguf/half';
import { GraphBuilder, attrInt } from './graph-builder';
import { OnnxDataType, OnnxDataTypeId } from './onnx-proto';

export type ComputeDtype = 'float32' | 'float16';

export const computeDtypeOf = (dtype: 'auto' | 'float32' | 'float16' | undefined): ComputeDtype => (dtype === 'float16' ? 'float16' : 'float32');

export const onnxTypeOf = (dtype: ComputeDtype): OnnxDataTypeId => (dtype === 'float16' ? OnnxDataType.FLOAT16 : OnnxDataType.FLOAT);

/** An initializer in the graph's compute type, from f32 values. */
export function weightInitializer(g: GraphBuilder, dtype: ComputeDtype, name: string, dims: number[], values: Float32Array): string {
  return dtype === 'float16' ? g.initializer(name, OnnxDataType.FLOAT16, dims, f32ArrayToF16(values)) : g.initializer(name, OnnxDataType.FLOAT, dims, values);
}

/** `x` cast to `to` unless the graph already computes in it. */
export function castTo(g: GraphBuilder, x: string, from: ComputeDtype, to: ComputeDtype): string {
  return from === to ? x : g.op('Cast', [x], { to: attrInt(onnxTypeOf(to)) });
}
