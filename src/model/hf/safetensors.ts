// safetensors files (single or sharded via model.safetensors.index.json): header parsing and
// per-tensor reads into one f32 buffer each (F32 read in place; F16/BF16 converted from a
// per-tensor scratch buffer), and U8 tensors (packed data such as MXFP4 blocks) read as bytes.
import { closeSync, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readFloatsAsF32, readFully, withFile } from '../read-fully';

export interface SafetensorsTensor {
  name: string;
  file: string;
  dtype: string;
  shape: number[];
  /** Absolute file offset. */
  offset: number;
  byteLength: number;
}

const DTYPE_BYTES: Readonly<Record<string, number>> = { F32: 4, F16: 2, BF16: 2, U8: 1 };

/** The checkpoint's tensors, or null when the directory has no safetensors weights. */
export function listSafetensors(dir: string): Map<string, SafetensorsTensor> | null {
  const single = join(dir, 'model.safetensors');
  const index = join(dir, 'model.safetensors.index.json');
  let files: string[];
  if (existsSync(index)) {
    const weightMap = (JSON.parse(readFileSync(index, 'utf8')) as { weight_map?: Record<string, string> }).weight_map;
    if (!weightMap) throw new Error(`${index}: no weight_map`);
    files = [...new Set(Object.values(weightMap))].map((f) => join(dir, f));
  } else if (existsSync(single)) {
    files = [single];
  } else {
    return null;
  }
  const tensors = new Map<string, SafetensorsTensor>();
  for (const file of files) for (const t of readSafetensorsHeader(file)) tensors.set(t.name, t);
  return tensors;
}

/** The tensors one safetensors file holds (its header; no data is read). */
export function readSafetensorsHeader(file: string): SafetensorsTensor[] {
  if (!existsSync(file)) throw new Error(`${file}: safetensors shard is missing`);
  const fd = openSync(file, 'r');
  try {
    const size = statSync(file).size;
    const lengthBytes = new Uint8Array(8);
    readFully(fd, lengthBytes, 0, file);
    const headerLength = Number(new DataView(lengthBytes.buffer).getBigUint64(0, true));
    if (headerLength <= 0 || 8 + headerLength > size) throw new Error(`${file}: not a safetensors file`);
    const headerBytes = new Uint8Array(headerLength);
    readFully(fd, headerBytes, 8, file);
    const header = JSON.parse(Buffer.from(headerBytes).toString('utf8')) as Record<string, unknown>;
    const dataStart = 8 + headerLength;
    const tensors: SafetensorsTensor[] = [];
    for (const [name, entry] of Object.entries(header)) {
      if (name === '__metadata__') continue;
      const { dtype, shape, data_offsets } = entry as { dtype: string; shape: number[]; data_offsets: [number, number] };
      const offset = dataStart + data_offsets[0];
      const byteLength = data_offsets[1] - data_offsets[0];
      if (offset + byteLength > size) throw new Error(`${file}: tensor ${name} runs past the end of the file; is it truncated?`);
      tensors.push({ name, file, dtype, shape, offset, byteLength });
    }
    return tensors;
  } catch (err) {
    if (err instanceof SyntaxError) throw new Error(`${file}: not a safetensors file (bad JSON header)`);
    throw err;
  } finally {
    closeSync(fd);
  }
}

export function checkSafetensorsDtype(tensor: SafetensorsTensor): void {
  const bytes = DTYPE_BYTES[tensor.dtype];
  if (!bytes) {
    throw new Error(`${tensor.file}: tensor ${tensor.name} has dtype ${tensor.dtype}, which is not supported (supported: F32, F16, BF16, U8)`);
  }
  const count = tensor.shape.reduce((a, b) => a * b, 1);
  if (count * bytes !== tensor.byteLength) throw new Error(`${tensor.file}: tensor ${tensor.name} has ${tensor.byteLength} bytes for shape [${tensor.shape.join(',')}]`);
}

/** Reads tensors grouped per file, each into its own Float32Array. */
export function readSafetensorsAsF32(tensors: SafetensorsTensor[], onTensor: (tensor: SafetensorsTensor, data: Float32Array) => void): void {
  const byFile = new Map<string, SafetensorsTensor[]>();
  for (const t of tensors) byFile.set(t.file, [...(byFile.get(t.file) ?? []), t]);
  for (const [file, list] of byFile) {
    withFile(file, (fd) => {
      for (const tensor of list) onTensor(tensor, readOne(fd, tensor));
    });
  }
}

/** A U8 tensor's bytes as stored (MXFP4 `*_blocks` and `*_scales`: hf/mxfp4.ts decodes them). */
export function readSafetensorsBytes(tensor: SafetensorsTensor): Uint8Array {
  checkSafetensorsDtype(tensor);
  if (tensor.dtype !== 'U8') throw new Error(`${tensor.file}: tensor ${tensor.name} has dtype ${tensor.dtype}, not U8`);
  const bytes = new Uint8Array(tensor.byteLength);
  withFile(tensor.file, (fd) => readFully(fd, bytes, tensor.offset, `${tensor.file}: tensor ${tensor.name}`));
  return bytes;
}

function readOne(fd: number, tensor: SafetensorsTensor): Float32Array {
  checkSafetensorsDtype(tensor);
  if (tensor.dtype === 'U8') throw new Error(`${tensor.file}: tensor ${tensor.name} holds U8 data (packed, e.g. MXFP4 blocks), not floats: read it with readSafetensorsBytes`);
  const count = tensor.shape.reduce((a, b) => a * b, 1);
  const dtype = tensor.dtype as 'F32' | 'F16' | 'BF16';
  return readFloatsAsF32(fd, { offset: tensor.offset, byteLength: tensor.byteLength, count, dtype }, `${tensor.file}: tensor ${tensor.name}`);
}
