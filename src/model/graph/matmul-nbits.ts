// GGML-quantized linear weights as com.microsoft MatMulNBits, which keeps them quantized in ORT
// (B is [N, K/block, block*bits/8] — the same [out, in] row order as GGML) and dequantizes per
// block inside the GEMM. Formats map exactly (checked against onnxruntime 1.30's CPU kernel):
//   q4_0 -> 4 bits, block 32, default zero point 8
//   q8_0 -> 8 bits, block 32, codes + 128, default zero point 128
//   q4_k -> 4 bits, block 32, float zero points (dmin*m / (d*sc))
//   q6_k -> 8 bits, block 16, uint8 zero point 32 (MatMulNBits has no 6-bit mode)
//
// accuracy_level (activation precision inside the kernel): level 4 (int8 activations, as
// llama.cpp's CPU kernels quantize activations to q8 too) except for q4_k, where 0 also stays
// exact; the 8-bit formats at level 0 take ORT's unpacked fallback (dequantizing per call). On
// AVX512-VNNI or AVX2 CPUs the segmented runner runs Q8_0 linears in the addon instead
// (runner/backends/native-q8.ts). Figures: docs/perf/onnxruntime-sessions.md.
import { GraphBuilder, attrInt } from './graph-builder';
import { OnnxDataType } from './onnx-proto';
import { unpackGgml, UnpackedQuant } from './ggml-unpack';
import { WeightTensor } from '../types';
import { concatArrays, elementCount } from './weights';

/** MatMulNBits accuracy_level, or 'auto' = the fastest measured level per format. */
export type AccuracyLevel = 0 | 1 | 2 | 3 | 4 | 'auto';

function resolveAccuracy(level: AccuracyLevel, u: UnpackedQuant): number {
  if (level !== 'auto') return level;
  return u.zeroPoints instanceof Float32Array ? 0 : 4;
}

/**
 * Emits y = x W^T (+ b) with MatMulNBits (one node per part when the parts' formats differ, as
 * in Q4_K_M files), or returns null when some part cannot be represented exactly.
 */
export function quantizedLinear(
  g: GraphBuilder,
  x: string,
  name: string,
  parts: readonly WeightTensor[],
  bias: Float32Array | null,
  inFeatures: number,
  outFeatures: number,
  accuracyLevel: AccuracyLevel = 'auto',
): string | null {
  const unpacked: UnpackedQuant[] = [];
  for (const part of parts) {
    if (part.kind !== 'quantized') return null;
    const u = unpackGgml(part.format, part.data, elementCount(part.shape));
    if (!u) return null;
    unpacked.push(u);
  }
  const layout = (u: UnpackedQuant) => `${u.bits}/${u.blockSize}/${zeroPointKind(u)}`;
  const sameLayout = unpacked.every((u) => layout(u) === layout(unpacked[0]));
  let y: string;
  if (sameLayout) {
    y = emitMatMulNBits(g, x, name, mergeRows(unpacked), inFeatures, outFeatures, accuracyLevel);
  } else {
    const outs = unpacked.map((u, i) => emitMatMulNBits(g, x, `${name}.part${i}`, u, inFeatures, parts[i].shape[0], accuracyLevel));
    y = g.op('Concat', outs, { axis: attrInt(-1) });
  }
  if (bias) y = g.op('Add', [y, g.initializer(`${name}.bias`, OnnxDataType.FLOAT, [outFeatures], bias)]);
  return y;
}

function emitMatMulNBits(g: GraphBuilder, x: string, name: string, u: UnpackedQuant, k: number, n: number, accuracyLevel: AccuracyLevel): string {
  const blocksPerRow = k / u.blockSize;
  const blobBytes = (u.blockSize * u.bits) / 8;
  const packed = u.bits === 8 ? u.codes : packNibbles(u.codes);
  const inputs = [
    x,
    g.initializer(`${name}.q`, OnnxDataType.UINT8, [n, blocksPerRow, blobBytes], packed),
    g.initializer(`${name}.scales`, OnnxDataType.FLOAT, [n * blocksPerRow], u.scales),
  ];
  if (u.zeroPoints instanceof Float32Array) {
    inputs.push(g.initializer(`${name}.zp`, OnnxDataType.FLOAT, [n * blocksPerRow], u.zeroPoints));
  } else if (u.zeroPoints) {
    inputs.push(g.initializer(`${name}.zp`, OnnxDataType.UINT8, [n * blocksPerRow], u.zeroPoints));
  }
  return g.op(
    'MatMulNBits',
    inputs,
    { K: attrInt(k), N: attrInt(n), bits: attrInt(u.bits), block_size: attrInt(u.blockSize), accuracy_level: attrInt(resolveAccuracy(accuracyLevel, u)) },
    'com.microsoft',
  );
}

/** Two 4-bit codes per byte, even element in the low nibble (MatMulNBits' packing). */
function packNibbles(codes: Uint8Array): Uint8Array {
  const out = new Uint8Array(codes.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = codes[2 * i] | (codes[2 * i + 1] << 4);
  return out;
}

function zeroPointKind(u: UnpackedQuant): string {
  if (u.zeroPoints instanceof Float32Array) return 'f32';
  return u.zeroPoints ? 'u8' : 'default';
}

/** Stacks unpacked parts row-wise (all with the same bits, block size and zero-point kind). */
function mergeRows(parts: UnpackedQuant[]): UnpackedQuant {
  if (parts.length === 1) return parts[0];
  const concat = concatArrays;
  const zps = parts.map((p) => p.zeroPoints);
  let zeroPoints: UnpackedQuant['zeroPoints'] = null;
  if (zps[0] instanceof Float32Array) zeroPoints = concat(zps as Float32Array[], (n) => new Float32Array(n));
  else if (zps[0] instanceof Uint8Array) zeroPoints = concat(zps as Uint8Array[], (n) => new Uint8Array(n));
  return {
    bits: parts[0].bits,
    blockSize: parts[0].blockSize,
    codes: concat(parts.map((p) => p.codes), (n) => new Uint8Array(n)),
    scales: concat(parts.map((p) => p.scales), (n) => new Float32Array(n)),
    zeroPoints,
  };
}
