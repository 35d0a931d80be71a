// Writes tensors as a safetensors file (the format src/model/hf/safetensors.ts reads): tests and
// benchmarks build real Hugging Face checkpoints with it.
import { writeFileSync } from 'node:fs';
import { encodeBF16, encodeF16 } from '../gguf/quantize';
import type { WeightTensor } from '../types';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

/** safetensors: u64 header length, JSON header (padded with spaces to 8 bytes), then the data. */
export function writeSafetensors(path: string, tensors: Array<{ name: string; tensor: WeightTensor }>, dtype: SafetensorsDtype): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const blobs: Uint8Array[] = [];
  let offset = 0;
  for (const { name, tensor } of tensors) {
    if (tensor.kind !== 'f32') throw new Error(`writeSafetensors: ${name} is quantized`);
    const bytes = encode(tensor.data, dtype);
    header[name] = { dtype, shape: tensor.shape, data_offsets: [offset, offset + bytes.byteLength] };
    blobs.push(bytes);
    offset += bytes.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  writeFileSync(path, Buffer.concat([length, Buffer.from(json), ...blobs]));
}

/** f32 -> F32/F16/BF16 bytes (BF16 rounds to nearest even, as torch does). */
export function encode(values: Float32Array, dtype: SafetensorsDtype): Uint8Array {
  if (dtype === 'F32') return new Uint8Array(values.buffer.slice(values.byteOffset, values.byteOffset + values.byteLength));
  return dtype === 'F16' ? encodeF16(values) : encodeBF16(values);
}
