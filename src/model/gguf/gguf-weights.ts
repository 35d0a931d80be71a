// Reads GGUF tensors into canonical HF weights: one buffer per tensor, read straight from the file.
import type { GgufMapping } from '../architectures/architecture';
import { readFloatsAsF32, readFully, withFile } from '../read-fully';
import type { ModelArchConfig, WeightTensor } from '../types';
import { WeightMap } from '../weight-map';
import { dequantizeMxfp4 } from './dequant';
import type { GgufFile, GgufTensor } from './gguf-file';
import { ggufMxfp4ToQ8_0, mxfp4AsWeight } from './mxfp4-to-q8';
import { GGML_TYPES, ggmlTypeName, type GgmlTypeInfo } from './ggml-types';
import { reorderRopeRows } from './rope-permute';

const ROPE_FREQS = 'rope_freqs.weight';

/** Checks every tensor's name and type up front, so a bad file fails at load, naming the tensor. */
export function checkGgufTensors(file: GgufFile, mapping: GgufMapping<ModelArchConfig>): void {
  for (const tensor of file.tensors) {
    mapping.tensorName(tensor.name);
    typeInfoOf(tensor, file.path);
  }
  if (!file.tensors.some((t) => t.name === 'token_embd.weight')) {
    throw new Error(`${file.path}: no token_embd.weight tensor`);
  }
}

export function readRopeFreqFactors(file: GgufFile): Float32Array | null {
  return readGgufTensorAsF32(file, ROPE_FREQS);
}

/** A small float tensor (RoPE factors) read whole as float32; null when the file has none of that name. */
export function readGgufTensorAsF32(file: GgufFile, name: string): Float32Array | null {
  const tensor = file.tensors.find((t) => t.name === name);
  return tensor ? withFile(file.path, (fd) => readAsF32(fd, tensor, typeInfoOf(tensor, file.path), file.path)) : null;
}

/** Reads the tensors whose canonical name is in `wanted` (others, e.g. an LM head a pooling graph drops, stay on disk). */
export function loadGgufWeights(file: GgufFile, config: ModelArchConfig, mapping: GgufMapping<ModelArchConfig>, wanted: ReadonlySet<string>): WeightMap {
  const weights = new WeightMap();
  withFile(file.path, (fd) => {
    for (const tensor of file.tensors) {
      const name = mapping.tensorName(tensor.name);
      if (name === null || !wanted.has(name)) continue;
      weights.set(name, readTensor(fd, tensor, name, file.path, config, mapping));
    }
  });
  return weights;
}

function readTensor(
  fd: number,
  tensor: GgufTensor,
  hfName: string,
  path: string,
  config: ModelArchConfig,
  mapping: GgufMapping<ModelArchConfig>,
): WeightTensor {
  const info = typeInfoOf(tensor, path);
  const shape = [...tensor.ggmlShape].reverse(); // GGML [in, out] is row-major [out, in]
  const heads = mapping.ropePermutedHeads(hfName, config);
  // The bytes stay as in the file unless converted to float32 or permuted below.
  const file = heads === null && (info.target !== 'f32' || info.name === 'F32') ? { path, offset: tensor.offset, byteLength: tensor.byteLength } : undefined;
  let tensorData: WeightTensor;
  if (info.name === 'MXFP4') {
    const raw = new Uint8Array(tensor.byteLength);
    readFully(fd, raw, tensor.offset, `${path}: tensor ${tensor.name}`);
    const count = shape.reduce((a, b) => a * b, 1);
    tensorData = mxfp4AsWeight(tensor.name, shape, ggufMxfp4ToQ8_0(raw, count), () => dequantizeMxfp4(raw, count));
  } else if (info.target === 'f32') {
    tensorData = { kind: 'f32', shape, data: readAsF32(fd, tensor, info, path), file };
  } else {
    const data = new Uint8Array(tensor.byteLength);
    readFully(fd, data, tensor.offset, `${path}: tensor ${tensor.name}`);
    tensorData = { kind: 'quantized', format: info.target, shape, data, file };
  }
  if (heads !== null) {
    const bytes = tensorData.kind === 'f32' ? new Uint8Array(tensorData.data.buffer) : tensorData.data;
    const rows = shape[0];
    if (rows !== heads * config.headDim) {
      throw new Error(`${path}: tensor ${tensor.name} has ${rows} rows, expected ${heads} heads × ${config.headDim}`);
    }
    reorderRopeRows(bytes, heads, config.headDim, bytes.byteLength / rows, 'to-hf');
  }
  return tensorData;
}

function readAsF32(fd: number, tensor: GgufTensor, info: GgmlTypeInfo, path: string): Float32Array {
  const count = tensor.ggmlShape.reduce((a, b) => a * b, 1);
  if (info.name === 'MXFP4') {
    const raw = new Uint8Array(tensor.byteLength);
    readFully(fd, raw, tensor.offset, `${path}: tensor ${tensor.name}`);
    return dequantizeMxfp4(raw, count);
  }
  const dtype = info.name as 'F32' | 'F16' | 'BF16';
  return readFloatsAsF32(fd, { offset: tensor.offset, byteLength: tensor.byteLength, count, dtype }, `${path}: tensor ${tensor.name}`);
}

function typeInfoOf(tensor: GgufTensor, path: string): GgmlTypeInfo {
  const info = GGML_TYPES.get(tensor.type);
  if (!info) {
    const supported = [...GGML_TYPES.values()].map((t) => t.name).join(', ');
    throw new Error(`${path}: tensor ${tensor.name} has type ${ggmlTypeName(tensor.type)}, which is not supported (supported: ${supported})`);
  }
  return info;
}
