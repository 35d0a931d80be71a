// GGML tensor types this server reads, with their block geometry (ggml/src/ggml-common.h).
import { GGMLQuantizationType } from '@huggingface/gguf';
import type { QuantFormat } from '../types';

export interface GgmlTypeInfo {
  /** Name as llama.cpp prints it (F32, Q4_K, …). */
  name: string;
  /** Elements per block (1 for plain floats). */
  blockSize: number;
  /** Bytes per block. */
  blockBytes: number;
  /** How the loader hands it on: dequantized to f32 (MXFP4 too, for now), or kept as raw GGML blocks. */
  target: 'f32' | QuantFormat;
}

export const GGML_TYPES: ReadonlyMap<number, GgmlTypeInfo> = new Map<number, GgmlTypeInfo>([
  [GGMLQuantizationType.F32, { name: 'F32', blockSize: 1, blockBytes: 4, target: 'f32' }],
  [GGMLQuantizationType.F16, { name: 'F16', blockSize: 1, blockBytes: 2, target: 'f32' }],
  [GGMLQuantizationType.BF16, { name: 'BF16', blockSize: 1, blockBytes: 2, target: 'f32' }],
  // block_q8_0: f16 d; int8 qs[32]
  [GGMLQuantizationType.Q8_0, { name: 'Q8_0', blockSize: 32, blockBytes: 34, target: 'q8_0' }],
  // block_q4_0: f16 d; uint8 qs[16] (two 4-bit values per byte)
  [GGMLQuantizationType.Q4_0, { name: 'Q4_0', blockSize: 32, blockBytes: 18, target: 'q4_0' }],
  // block_q4_K: f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]
  [GGMLQuantizationType.Q4_K, { name: 'Q4_K', blockSize: 256, blockBytes: 144, target: 'q4_k' }],
  // block_q6_K: uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d
  [GGMLQuantizationType.Q6_K, { name: 'Q6_K', blockSize: 256, blockBytes: 210, target: 'q6_k' }],
  // block_mxfp4: uint8 e (E8M0); uint8 qs[16] (element j low nibble, j + 16 high)
  [GGMLQuantizationType.MXFP4, { name: 'MXFP4', blockSize: 32, blockBytes: 17, target: 'f32' }],
]);

/** The block geometry of each quantized format, read off GGML_TYPES. */
export const QUANT_BLOCK = Object.fromEntries(
  [...GGML_TYPES.values()].filter((t) => t.target !== 'f32').map((t) => [t.target, t]),
) as Readonly<Record<QuantFormat, GgmlTypeInfo>>;

/** The llama.cpp name of any GGML type id, for error messages. */
export function ggmlTypeName(type: number): string {
  return GGMLQuantizationType[type] ?? `unknown type ${type}`;
}

/** Bytes of one row of `rowLength` elements; throws when the row is not a whole number of blocks. */
export function rowBytes(info: { blockSize: number; blockBytes: number }, rowLength: number, what: string): number {
  if (rowLength % info.blockSize !== 0) {
    throw new Error(`${what}: row length ${rowLength} is not a multiple of the block size ${info.blockSize}`);
  }
  return (rowLength / info.blockSize) * info.blockBytes;
}
