// GGUF v3 writer: header (metadata via @huggingface/gguf's serializer) + tensor infos, then each
// tensor's data produced, encoded and written one at a time, so a large model streams to disk.
import { closeSync, openSync, writeSync } from 'node:fs';
import { GGMLQuantizationType, GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata, type MetadataValue } from '@huggingface/gguf';
import { encodeBF16, encodeF16, quantizeMxfp4, quantizeQ8_0 } from './quantize';

export interface GgufTypedValue {
  type: GGUFValueType;
  value: MetadataValue;
  /** Element type of an ARRAY. */
  subType?: GGUFValueType;
}

export type GgufWriteType = 'f32' | 'f16' | 'bf16' | 'q8_0' | 'mxfp4';

export interface GgufTensorToWrite {
  /** GGUF name (e.g. blk.0.attn_q.weight). */
  name: string;
  /** Row-major shape, outermost first ([out, in]); written in GGML order (reversed). */
  shape: number[];
  type: GgufWriteType;
  /** The values, or a function producing them when the writer gets to this tensor. */
  data: Float32Array | (() => Float32Array);
}

const ALIGNMENT = 32;

const TYPE_IDS: Record<GgufWriteType, GGMLQuantizationType> = {
  f32: GGMLQuantizationType.F32,
  f16: GGMLQuantizationType.F16,
  bf16: GGMLQuantizationType.BF16,
  q8_0: GGMLQuantizationType.Q8_0,
  mxfp4: GGMLQuantizationType.MXFP4,
};

/** Elements and bytes per block of the block-quantized types. */
const BLOCKS: Partial<Record<GgufWriteType, { size: number; bytes: number; name: string }>> = {
  q8_0: { size: 32, bytes: 34, name: 'Q8_0' },
  mxfp4: { size: 32, bytes: 17, name: 'MXFP4' },
};

/** Typed metadata constructors, e.g. `{ 'llama.block_count': gv.u32(4) }`. */
export const gv = {
  u32: (value: number): GgufTypedValue => ({ type: GGUFValueType.UINT32, value }),
  i32: (value: number): GgufTypedValue => ({ type: GGUFValueType.INT32, value }),
  f32: (value: number): GgufTypedValue => ({ type: GGUFValueType.FLOAT32, value }),
  bool: (value: boolean): GgufTypedValue => ({ type: GGUFValueType.BOOL, value }),
  str: (value: string): GgufTypedValue => ({ type: GGUFValueType.STRING, value }),
  strings: (value: string[]): GgufTypedValue => ({ type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING, value }),
  f32s: (value: number[]): GgufTypedValue => ({ type: GGUFValueType.ARRAY, subType: GGUFValueType.FLOAT32, value }),
  i32s: (value: number[]): GgufTypedValue => ({ type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32, value }),
};

export function writeGguf(path: string, metadata: Record<string, GgufTypedValue>, tensors: GgufTensorToWrite[]): void {
  const sizes = tensors.map(tensorByteLength);
  const header = concat([serializeKv(metadata, tensors.length), ...tensorInfos(tensors, sizes)]);
  const fd = openSync(path, 'w');
  try {
    let position = 0;
    const write = (bytes: Uint8Array) => {
      writeSync(fd, bytes, 0, bytes.byteLength, position);
      position += bytes.byteLength;
    };
    write(header);
    write(new Uint8Array(padding(position)));
    tensors.forEach((tensor, i) => {
      const values = typeof tensor.data === 'function' ? tensor.data() : tensor.data;
      const count = tensor.shape.reduce((a, b) => a * b, 1);
      if (values.length !== count) {
        throw new Error(`writeGguf: tensor ${tensor.name} has ${values.length} values, its shape [${tensor.shape.join(',')}] needs ${count}`);
      }
      const bytes = encode(values, tensor.type);
      if (bytes.byteLength !== sizes[i]) throw new Error(`writeGguf: tensor ${tensor.name} encoded to an unexpected size`);
      write(bytes);
      write(new Uint8Array(padding(position)));
    });
  } finally {
    closeSync(fd);
  }
}

function encode(values: Float32Array, type: GgufWriteType): Uint8Array {
  if (type === 'f32') return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  if (type === 'bf16') return encodeBF16(values);
  if (type === 'mxfp4') return quantizeMxfp4(values);
  return type === 'f16' ? encodeF16(values) : quantizeQ8_0(values);
}

function tensorByteLength(tensor: GgufTensorToWrite): number {
  const count = tensor.shape.reduce((a, b) => a * b, 1);
  const block = BLOCKS[tensor.type];
  if (block) {
    const rowLength = tensor.shape[tensor.shape.length - 1];
    if (rowLength % block.size !== 0) throw new Error(`writeGguf: ${block.name} tensor ${tensor.name} has row length ${rowLength}, not a multiple of ${block.size}`);
    return (count / block.size) * block.bytes;
  }
  return count * (tensor.type === 'f32' ? 4 : 2);
}

/** Magic, version, counts and key/values, unpadded (tensor infos follow directly). */
function serializeKv(metadata: Record<string, GgufTypedValue>, tensorCount: number): Uint8Array {
  const typed = {
    version: { value: 3, type: GGUFValueType.UINT32 },
    tensor_count: { value: BigInt(tensorCount), type: GGUFValueType.UINT64 },
    kv_count: { value: BigInt(Object.keys(metadata).length), type: GGUFValueType.UINT64 },
    ...metadata,
  } as GGUFTypedMetadata;
  return serializeGgufMetadata(typed, { alignment: 1 });
}

/** gguf_tensor_info: name (u64 len + bytes), n_dims u32, dims u64[] innermost first, type u32, offset u64. */
function tensorInfos(tensors: GgufTensorToWrite[], sizes: number[]): Uint8Array[] {
  let offset = 0;
  return tensors.map((tensor, i) => {
    const name = new TextEncoder().encode(tensor.name);
    const dims = [...tensor.shape].reverse();
    const bytes = new Uint8Array(8 + name.byteLength + 4 + 8 * dims.length + 4 + 8);
    const view = new DataView(bytes.buffer);
    let at = 0;
    view.setBigUint64(at, BigInt(name.byteLength), true);
    bytes.set(name, (at += 8));
    view.setUint32((at += name.byteLength), dims.length, true);
    at += 4;
    for (const dim of dims) {
      view.setBigUint64(at, BigInt(dim), true);
      at += 8;
    }
    view.setUint32(at, TYPE_IDS[tensor.type], true);
    view.setBigUint64(at + 4, BigInt(offset), true);
    offset += sizes[i] + padding(sizes[i]);
    return bytes;
  });
}

function padding(position: number): number {
  return (ALIGNMENT - (position % ALIGNMENT)) % ALIGNMENT;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
