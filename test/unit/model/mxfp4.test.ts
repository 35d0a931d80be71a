// MXFP4: GGUF blocks (ggml's block_mxfp4) and Hugging Face `*_blocks` / `*_scales` pairs decode to
// the values worked out by hand here, agree with each other, quantize as ggml's reference does,
// and round-trip through the GGUF writer and loader; U8 safetensors tensors read as bytes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomDecoderWeights } from '../../../src/model/dummy/random-weights';
import { dequantize, dequantizeMxfp4 } from '../../../src/model/gguf/dequant';
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import { quantizeMxfp4 } from '../../../src/model/gguf/quantize';
import { writeModelGguf } from '../../../src/model/gguf/write-model';
import { gv, type GgufTypedValue } from '../../../src/model/gguf/writer';
import { dequantizeMxfp4Blocks } from '../../../src/model/hf/mxfp4';
import { listSafetensors, readSafetensorsAsF32, readSafetensorsBytes } from '../../../src/model/hf/safetensors';
import type { DecoderArchConfig } from '../../../src/model/types';

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-mxfp4-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Hugging Face MXFP4 blocks and scales', () => {
  it('decodes hand-worked blocks: element 2i in the low nibble, 2i + 1 in the high one, times 2^(scale - 127)', () => {
    // Two groups of 32 values. Group 0, scale 127 (x1): byte 0 = 0x21 -> codes 1 (0.5) then 2 (1.0);
    // byte 1 = 0x9f -> code 15 (-6) then 9 (-0.5); byte 2 = 0x87 -> 7 (6) then 8 (-0).
    // Group 1, scale 130 (x8): byte 0 = 0x5b -> code 11 (-1.5 * 8 = -12) then 5 (3 * 8 = 24).
    // Group 1 byte 15 = 0x3c -> elements 30, 31: code 12 (-2 * 8 = -16), code 3 (1.5 * 8 = 12).
    const blocks = new Uint8Array(32);
    blocks.set([0x21, 0x9f, 0x87], 0);
    blocks[16] = 0x5b;
    blocks[31] = 0x3c;
    const out = dequantizeMxfp4Blocks(blocks, Uint8Array.from([127, 130]), [1, 2, 16]);
    expect(out.length).toBe(64);
    expect(Array.from(out.subarray(0, 6))).toEqual([0.5, 1, -6, -0.5, 6, -0]);
    expect(Object.is(out[5], -0)).toBe(true);
    expect(Array.from(out.subarray(6, 32))).toEqual(new Array(26).fill(0));
    expect([out[32], out[33], out[62], out[63]]).toEqual([-12, 24, -16, 12]);
    // Scale 120: 2^-7; scale 0: 2^-127 (a float32 subnormal, still exact).
    expect(dequantizeMxfp4Blocks(new Uint8Array(16).fill(0x77), Uint8Array.from([120]), [1, 16])[31]).toBe(6 / 128);
    expect(dequantizeMxfp4Blocks(new Uint8Array(16).fill(0x22), Uint8Array.from([0]), [1, 16])[0]).toBe(2 ** -127);
  });

  it('rejects shapes and sizes that do not fit', () => {
    expect(() => dequantizeMxfp4Blocks(new Uint8Array(32), new Uint8Array(2), [2, 8, 2])).toThrow(/does not end in 16 bytes/);
    expect(() => dequantizeMxfp4Blocks(new Uint8Array(31), new Uint8Array(2), [2, 16])).toThrow(/31 bytes/);
    expect(() => dequantizeMxfp4Blocks(new Uint8Array(32), new Uint8Array(3), [2, 16])).toThrow(/3 values/);
  });
});

describe('GGUF MXFP4 blocks', () => {
  it('decodes a hand-worked block: element j in byte j low nibble, j + 16 high, doubled codes times 2^(e - 128)', () => {
    // e = 129: d = 2. qs[0] = 0x3d -> element 0 code 13 (kvalues -6, x 2 = -12) and element 16 code 3
    // (kvalues 3, x 2 = 6). qs[15] = 0x70 -> element 15 code 0, element 31 code 7 (kvalues 12, x 2 = 24).
    const block = new Uint8Array(17);
    block[0] = 129;
    block[1] = 0x3d;
    block[16] = 0x70;
    const out = dequantizeMxfp4(block, 32);
    expect([out[0], out[16], out[15], out[31]]).toEqual([-12, 6, 0, 24]);
    expect(Array.from(out.subarray(1, 15))).toEqual(new Array(14).fill(0));
    expect(() => dequantizeMxfp4(block, 64)).toThrow(/need 34 bytes/);
    expect(() => dequantizeMxfp4(block, 31)).toThrow(/not a multiple of 32/);
  });

  it('holds the same values as the Hugging Face blocks it is repacked from (llama.cpp converter order)', () => {
    let s = 5;
    const rand = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 24;
    const groups = 12;
    const hfBlocks = Uint8Array.from({ length: groups * 16 }, rand);
    const scales = Uint8Array.from({ length: groups }, () => 110 + (rand() % 30));
    // Repack by definition: element k of a group is code(k); GGUF byte j = code(j) | code(j + 16) << 4.
    const gguf = new Uint8Array(groups * 17);
    for (let g = 0; g < groups; g++) {
      const code = (k: number) => (hfBlocks[g * 16 + (k >> 1)] >> (4 * (k & 1))) & 0xf;
      gguf[g * 17] = scales[g];
      for (let j = 0; j < 16; j++) gguf[g * 17 + 1 + j] = code(j) | (code(j + 16) << 4);
    }
    // Equal as numbers (ggml's code 8 is +0, transformers' -0).
    const plusZero = (a: Float32Array) => Array.from(a, (x) => x + 0);
    expect(plusZero(dequantizeMxfp4(gguf, groups * 32))).toEqual(plusZero(dequantizeMxfp4Blocks(hfBlocks, scales, [3, 4, 16])));
  });

  it('quantizes as ggml does: e from the block maximum, the nearest code, the first on ties', () => {
    // max |x| = 1: e = floor(log2 1) - 2 + 127 = 125, d = 2^-3; codes x d = 0, .125, .25, .375, .5, .75, 1, 1.5.
    const values = new Float32Array(32);
    values.set([1, 0.3, 0.3125, -0.7, 0.06, -0.0625], 0);
    values[16] = 0.6;
    const q = quantizeMxfp4(values);
    expect(q[0]).toBe(125);
    // element 0: 1 -> code 6; element 16: 0.6 -> 0.5 (code 4)
    expect(q[1]).toBe(6 | (4 << 4));
    expect(q[2] & 0xf).toBe(2); // 0.3 -> 0.25
    expect(q[3] & 0xf).toBe(2); // 0.3125: tie of 0.25 and 0.375, the first code
    expect(q[4] & 0xf).toBe(13); // -0.7 -> -0.75
    expect(q[5] & 0xf).toBe(0); // 0.06 -> 0 (0.0625 is farther)
    expect(q[6] & 0xf).toBe(0); // -0.0625: tie of +0 (code 0) and -0.125, the first code
    expect(quantizeMxfp4(new Float32Array(32))[0]).toBe(0);
    // Values on the grid round-trip exactly when each block holds a +-6 x 2^k (its own maximum).
    const grid = Float32Array.from({ length: 64 }, (_, i) => {
      const magnitude = i === 0 || i === 40 ? 6 : [0.5, 1, 1.5, 2, 3, 4, 6, 0][i % 8];
      return magnitude === 0 ? 0 : magnitude * (i % 3 ? 1 : -1) * (i < 32 ? 2 ** -4 : 2 ** 3);
    });
    expect(Array.from(dequantizeMxfp4(quantizeMxfp4(grid), 64))).toEqual(Array.from(grid));
  });

  it('round-trips a model through the GGUF writer: every matrix loads as Q8_0 holding its MXFP4 values', async () => {
    const config: DecoderArchConfig = {
      architecture: 'llama',
      hiddenSize: 64,
      intermediateSize: 96,
      numLayers: 1,
      numHeads: 4,
      numKvHeads: 2,
      headDim: 16,
      vocabSize: 64,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      ropeScaling: null,
      maxPositionEmbeddings: 256,
      tieWordEmbeddings: false,
      attentionBias: false,
    };
    const tokenizer: Record<string, GgufTypedValue> = {
      'tokenizer.ggml.model': gv.str('llama'),
      'tokenizer.ggml.tokens': gv.strings(Array.from({ length: 64 }, (_, i) => `t${i}`)),
      'tokenizer.ggml.scores': gv.f32s(new Array(64).fill(0)),
      'tokenizer.ggml.token_type': gv.i32s(new Array(64).fill(1)),
    };
    const source = randomDecoderWeights(config, 3);
    const path = join(dir, 'llama-mxfp4.gguf');
    writeModelGguf(path, config, source, tokenizer, 'mxfp4');
    const weights = (await loadGgufModel(path, { loadWeights: true })).weights!;
    for (const { name, shape, values } of source) {
      const got = weights.get(name);
      expect(got.kind).toBe(shape.length === 1 ? 'f32' : 'quantized');
      const v = values();
      const expected = shape.length === 1 ? v : dequantizeMxfp4(quantizeMxfp4(v), v.length);
      const data = got.kind === 'f32' ? got.data : dequantize('q8_0', got.data, v.length);
      expect({ name, same: Buffer.from(data.buffer, data.byteOffset, data.byteLength).equals(Buffer.from(expected.buffer)) }).toEqual({ name, same: true });
    }
  });
});

describe('safetensors U8 tensors', () => {
  it('reads MXFP4 blocks and scales as bytes, and refuses them as floats', () => {
    const blocks = Uint8Array.from({ length: 2 * 16 }, (_, i) => (i * 37) & 0xff);
    const scales = Uint8Array.from([126, 128]);
    const header = JSON.stringify({
      'mlp.experts.down_proj_blocks': { dtype: 'U8', shape: [1, 2, 16], data_offsets: [0, 32] },
      'mlp.experts.down_proj_scales': { dtype: 'U8', shape: [1, 2], data_offsets: [32, 34] },
    });
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(header.length));
    const file = join(dir, 'model.safetensors');
    writeFileSync(file, Buffer.concat([length, Buffer.from(header), blocks, scales]));
    const tensors = listSafetensors(dir)!;
    const b = tensors.get('mlp.experts.down_proj_blocks')!;
    const s = tensors.get('mlp.experts.down_proj_scales')!;
    expect(Array.from(readSafetensorsBytes(b))).toEqual(Array.from(blocks));
    expect(Array.from(readSafetensorsBytes(s))).toEqual([126, 128]);
    const values = dequantizeMxfp4Blocks(readSafetensorsBytes(b), readSafetensorsBytes(s), b.shape);
    expect(values[0]).toBe(0); // byte 0 = 0x00
    expect([values[2], values[3]]).toEqual([1.5, 0.5]); // byte 1 = 0x25: codes 5 (3) and 2 (1), scale 126 = x 1/2
    expect(() => readSafetensorsAsF32([b], () => undefined)).toThrow(/U8 data .* readSafetensorsBytes/);
  });
});
