// Parses a GGUF file's header (metadata + tensor infos) with @huggingface/gguf and
// turns tensor infos into absolute byte ranges, checked against the file size.
import { statSync } from 'node:fs';
import { gguf, type GGUFTypedMetadata } from '@huggingface/gguf';
import { GGML_TYPES, ggmlTypeName, rowBytes } from './ggml-types';

export type GgufMetadata = Record<string, unknown>;

export interface GgufTensor {
  name: string;
  /** GGML order: innermost (row length) first. */
  ggmlShape: number[];
  type: number;
  /** Absolute file offset of the data. */
  offset: number;
  byteLength: number;
}

export interface GgufFile {
  path: string;
  version: number;
  metadata: GgufMetadata;
  typedMetadata: GGUFTypedMetadata;
  tensors: GgufTensor[];
}

export async function readGgufFile(path: string): Promise<GgufFile> {
  let parsed;
  try {
    parsed = await gguf(path, { allowLocalFile: true, typedMetadata: true });
  } catch (err) {
    throw new Error(`${path}: not a readable GGUF file (${(err as Error).message})`);
  }
  const metadata = parsed.metadata as unknown as GgufMetadata;
  const version = Number(metadata.version);
  if (version !== 2 && version !== 3) throw new Error(`${path}: GGUF version ${version} is not supported (only 2 and 3)`);
  if (!parsed.littleEndian) throw new Error(`${path}: big-endian GGUF files are not supported`);

  const fileSize = statSync(path).size;
  const dataStart = Number(parsed.tensorDataOffset);
  const tensors = parsed.tensorInfos.map((info): GgufTensor => {
    const ggmlShape = info.shape.map(Number);
    const offset = dataStart + Number(info.offset);
    const typeInfo = GGML_TYPES.get(info.dtype);
    // Unsupported types get byteLength 0 here; the loader rejects them by name.
    const byteLength = typeInfo
      ? rowBytes(typeInfo, ggmlShape[0], `tensor ${info.name}`) * ggmlShape.slice(1).reduce((a, b) => a * b, 1)
      : 0;
    if (offset + byteLength > fileSize) {
      throw new Error(`${path}: tensor ${info.name} (${ggmlTypeName(info.dtype)}) runs past the end of the file; is it truncated?`);
    }
    return { name: info.name, ggmlShape, type: info.dtype, offset, byteLength };
  });
  return { path, version, metadata, typedMetadata: parsed.typedMetadata, tensors };
}
