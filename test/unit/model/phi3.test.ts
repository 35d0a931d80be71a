/** @jest-environment ./test/helpers/ort-environment.js */
// phi3 (Phi-3.5-mini, Phi-4-mini) on seeded random weights in both shipped layouts: the HF
// directory (fused qkv_proj / gate_up_proj, partial_rotary_factor, LongRoPE) and its llama.cpp
// GGUF conversion, against an independent float64 forward of the HF checkpoint, with both
// LongRoPE tables, on each attention path; and the HF directory against its GGUF.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PHI4_MINI_TOY, writePhi3Model, type Phi3Files, type Phi3Shape } from '../../../bench/random-phi3';
import { phi3 } from '../../../src/model/architectures/phi3';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import { chooseDecoderBackend } from '../../../src/model/runner/backends/choose-backend';
import { f32Addon } from '../../../src/model/runner/backends/native-f32';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { DecoderArchConfig, LoadedModel } from '../../../src/model/types';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referencePhi3 } from '../../helpers/reference-phi3';
import { ATTENTION_PATHS, BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';

const STORIES = sharedModel('stories260K.gguf');
const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301, 5, 77, 128, 64];
/** The toy's original_max_position_embeddings (256): the short table; above it (4096): the long one. */
const SHORT = 256;
const LONG = 4096;

async function logitsOf(model: LoadedModel, attention: 'native' | 'graph', maxModelLen: number, nativeQ8Gemm?: boolean): Promise<Float32Array[]> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', attention, maxModelLen, nativeQ8Gemm });
  try {
    return await runChunked(runner, PROMPT, 7, new BlockAllocator(runner).table(PROMPT.length));
  } finally {
    await runner.dispose();
  }
}

function worstDiff(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  return Math.max(...a.map((row, i) => maxAbsDiff(row, b[i])));
}

needs(STORIES).describe('phi3', () => {
  let dir: string;
  const files = new Map<string, Phi3Files>();
  const shapes: Record<string, Phi3Shape> = {
    'Phi-4-mini shape (partial rotary 0.75, LongRoPE, tied)': PHI4_MINI_TOY,
    'Phi-3.5-mini shape (whole-head RoPE, LongRoPE, untied)': { ...PHI4_MINI_TOY, partialRotaryFactor: 1, tieWordEmbeddings: false, numKvHeads: 4 },
  };
  const LONG_ROPE_SHAPES = Object.keys(shapes);
  /** Phi-3-mini-4k's kind: plain RoPE and a sliding window (here 6, shorter than the prompt). */
  const WINDOWED = 'Phi-3-mini-4k shape (sliding window 6, plain RoPE)';
  shapes[WINDOWED] = { ...PHI4_MINI_TOY, partialRotaryFactor: 1, longRopeOriginal: null, slidingWindow: 6 };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'phi3-'));
    for (const [name, shape] of Object.entries(shapes)) files.set(name, await writePhi3Model(join(dir, String(files.size)), shape, STORIES));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the HF config and the GGUF conversion into the same config', async () => {
    const { hfDir, gguf } = files.get(Object.keys(shapes)[0])!;
    const hf = (await loadModel(loadOptions(hfDir, { loadWeights: false }))).config as DecoderArchConfig;
    const fromGguf = (await loadModel(loadOptions(gguf, { loadWeights: false }))).config as DecoderArchConfig;
    expect(hf).toMatchObject({ architecture: 'phi3', headDim: 32, rotaryDim: 24, tieWordEmbeddings: true, maxPositionEmbeddings: 16384 });
    expect(hf.ropeScaling).toMatchObject({ rope_type: 'longrope', original_max_position_embeddings: 256 });
    expect(hf.ropeScaling!.attention_factor).toBeCloseTo(Math.sqrt(1 + Math.log(64) / Math.log(256)), 12);
    expect(fromGguf).toMatchObject({ architecture: 'phi3', headDim: 32, rotaryDim: 24, tieWordEmbeddings: true, maxPositionEmbeddings: 16384 });
    const scaling = fromGguf.ropeScaling!;
    expect(scaling.attention_factor).toBeCloseTo(hf.ropeScaling!.attention_factor as number, 6);
    expect(scaling.long_factor).toEqual((hf.ropeScaling!.long_factor as number[]).map(Math.fround));
    expect(scaling.short_factor).toEqual((hf.ropeScaling!.short_factor as number[]).map(Math.fround));
  });

  it('reads transformers >= 4.56 configs, which nest the RoPE settings in rope_parameters', () => {
    const { configJson } = files.get(Object.keys(shapes)[0])!;
    const { rope_theta, rope_scaling, partial_rotary_factor, ...rest } = configJson;
    const nested = { ...rest, rope_parameters: { rope_theta, partial_rotary_factor, ...(rope_scaling as object), rope_type: 'longrope' } };
    const config = phi3.hf.config(nested, { source: 'nested', hasTensor: () => null });
    expect(config).toMatchObject({ rotaryDim: 24, ropeTheta: rope_theta });
    expect(config.ropeScaling).toMatchObject({ rope_type: 'longrope', original_max_position_embeddings: 256, short_factor: (rope_scaling as Record<string, unknown>).short_factor });
  });

  it('splits the fused projections into q/k/v and gate/up rows', async () => {
    const { hfDir, tensors } = files.get(Object.keys(shapes)[0])!;
    const weights = (await loadModel(loadOptions(hfDir))).weights!;
    const qkv = tensors.get('model.layers.1.self_attn.qkv_proj.weight')!;
    const gateUp = tensors.get('model.layers.1.mlp.gate_up_proj.weight')!;
    const rows = (name: string) => {
      const t = weights.get(`model.layers.1.${name}.weight`);
      return t.kind === 'f32' ? t : null;
    };
    expect(rows('self_attn.q_proj')?.shape).toEqual([128, 128]);
    expect(rows('self_attn.v_proj')?.data).toEqual(qkv.subarray(192 * 128));
    expect(rows('mlp.gate_proj')?.data).toEqual(gateUp.subarray(0, 160 * 128));
    expect(rows('mlp.up_proj')?.data).toEqual(gateUp.subarray(160 * 128));
    expect(weights.has('model.layers.1.self_attn.qkv_proj.weight')).toBe(false);
  });

  describe.each(LONG_ROPE_SHAPES)('%s', (name) => {
    for (const path of ATTENTION_PATHS) {
      for (const [table, maxModelLen] of [['short', SHORT], ['long', LONG]] as const) {
        path.gate.it(`${path.name}, ${table} LongRoPE table: HF directory matches the float64 reference (max abs diff < 1e-3)`, async () => {
          const { hfDir, configJson, tensors } = files.get(name)!;
          const got = await logitsOf(await loadModel(loadOptions(hfDir)), path.attention, maxModelLen);
          const expected = referencePhi3(configJson, tensors, PROMPT, { maxModelLen });
          expect(worstDiff(got, expected)).toBeLessThan(1e-3);
          // The other table gives other logits: the comparison above tells the tables apart.
          const other = referencePhi3(configJson, tensors, PROMPT, { maxModelLen: maxModelLen === SHORT ? LONG : SHORT });
          expect(worstDiff(got, other)).toBeGreaterThan(1e-2);
        });
      }
    }

  });

  describe(WINDOWED, () => {
    ATTENTION_PATHS[0].gate.it('native paged attention: HF directory matches the float64 reference, window applied', async () => {
      const { hfDir, configJson, tensors } = files.get(WINDOWED)!;
      const got = await logitsOf(await loadModel(loadOptions(hfDir)), 'native', LONG);
      expect(worstDiff(got, referencePhi3(configJson, tensors, PROMPT, { maxModelLen: LONG }))).toBeLessThan(1e-3);
      const unwindowed = referencePhi3({ ...configJson, sliding_window: null }, tensors, PROMPT, { maxModelLen: LONG });
      expect(worstDiff(got, unwindowed)).toBeGreaterThan(1e-2);
    });

    it('the in-graph attention runner refuses the window at start-up, unless max_model_len is within it', async () => {
      const { hfDir, configJson, tensors } = files.get(WINDOWED)!;
      const model = await loadModel(loadOptions(hfDir));
      await expect(createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', attention: 'graph' })).rejects.toThrow(/sliding window \(6 positions/);
      const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', attention: 'graph', maxModelLen: 6 });
      try {
        const got = await runChunked(runner, PROMPT.slice(0, 6), 3, new BlockAllocator(runner).table(6));
        expect(worstDiff(got, referencePhi3(configJson, tensors, PROMPT.slice(0, 6), { maxModelLen: 6 }))).toBeLessThan(1e-3);
      } finally {
        await runner.dispose();
      }
    });
  });

  describe.each(Object.keys(shapes))('%s', (name) => {
    ATTENTION_PATHS[0].gate.it('the GGUF conversion gives the HF directory\'s logits', async () => {
      const { hfDir, gguf } = files.get(name)!;
      const [fromHf, fromGguf] = [await logitsOf(await loadModel(loadOptions(hfDir)), 'native', LONG), await logitsOf(await loadModel(loadOptions(gguf)), 'native', LONG)];
      // The GGUF holds the LongRoPE factors and attn_factor as float32 (config.json: doubles).
      expect(worstDiff(fromHf, fromGguf)).toBeLessThan(1e-4);
    });
  });

  describe('Q8_0 GGUF', () => {
    const q8 = new Map<string, Phi3Files>();
    beforeAll(async () => {
      for (const name of LONG_ROPE_SHAPES) q8.set(name, await writePhi3Model(join(dir, `q8-${q8.size}`), shapes[name], STORIES, 3, 'q8_0'));
    });

    ATTENTION_PATHS[0].gate.it('both run in native-q8; native-f32 declines partial rotary with the reason', async () => {
      const native = nativeKernels()!;
      const opts = { device: 'cpu' as const, dtype: 'auto' as const, keepQuantized: true };
      if (native.q8Available) {
        for (const name of LONG_ROPE_SHAPES) expect(chooseDecoderBackend(await loadModel(loadOptions(q8.get(name)!.gguf)), opts, native).name).toBe('native-q8');
      }
      const f32 = f32Addon();
      if (f32 && f32.simd !== 'portable') {
        const partial = await loadModel(loadOptions(files.get(LONG_ROPE_SHAPES[0])!.hfDir));
        expect(chooseDecoderBackend(partial, opts, native, f32).reason).toContain('RoPE rotates 24 of 32 dims per head (partial rotary)');
      }
    });

    describe.each(LONG_ROPE_SHAPES)('%s', (name) => {
      ATTENTION_PATHS[0].gate.it("native-q8 gives the MatMulNBits segments' logits, within Q8_0 error of the float64 reference", async () => {
        const { gguf, configJson, tensors } = q8.get(name)!;
        const model = await loadModel(loadOptions(gguf));
        const [addon, segments] = [await logitsOf(model, 'native', LONG, true), await logitsOf(model, 'native', LONG, false)];
        expect(worstDiff(addon, segments)).toBeLessThan(1e-3);
        // 8-bit weights (the tied head's too) and activations: measured 1.2% (partial rotary) and 2.4% of the largest logit.
        const expected = referencePhi3(configJson, tensors, PROMPT, { maxModelLen: LONG });
        const largest = Math.max(...expected.map((row) => Math.max(...row.map(Math.abs))));
        expect(worstDiff(addon, expected) / largest).toBeLessThan(0.05);
      });
    });
  });
});
