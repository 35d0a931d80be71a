// PEFT LoRA directories load into LoraWeights: scaling folded into B, fused phi3 projections split,
// --lora-dtype rounding, and W + (alpha/r)·B·A checked in float64 against the file's own numbers.
import { join } from 'node:path';
import { randomWeights } from '../../../bench/random-llama';
import { f16ToF32, f32ToF16 } from '../../../src/model/gguf/half';
import { loadLoraAdapter } from '../../../src/model/lora/load-lora';
import type { LoraModule } from '../../../src/model/lora/lora-weights';
import { loraWeightName, mergeLora } from '../../../src/model/lora/merge-lora';
import { writeRandomPeftAdapter } from '../../../src/model/lora/write-adapter';
import { weight } from '../../helpers/reference-forward';
import { ALL_MODULES, LIMITS, LLAMA_BASE, PHI3_BASE, tempDirPerSuite } from '../../helpers/lora-files';
import { referenceLoraForward, storedPairDelta } from '../../helpers/lora-reference';
import { maxAbsDiff } from '../../helpers/runner-driver';

describe('PEFT LoRA directories', () => {
  const tmp = tempDirPerSuite('ortllm-lora-peft-');

  it.each([
    { rank: 8, alpha: 16, useRslora: false, scaling: 16 / 8 },
    { rank: 16, alpha: 24, useRslora: false, scaling: 24 / 16 },
    { rank: 16, alpha: 24, useRslora: true, scaling: 24 / 4 },
  ])('rank $rank, alpha $alpha, rslora $useRslora: every module of every layer, B scaled by $scaling', async ({ rank, alpha, useRslora, scaling }) => {
    const dir = join(tmp(), `r${rank}-${useRslora}`);
    const stored = writeRandomPeftAdapter(dir, LLAMA_BASE, { rank, alpha, seed: 7, modules: ALL_MODULES, useRslora });
    const lora = await loadLoraAdapter(dir, LLAMA_BASE, LIMITS);
    expect([lora.rank, lora.alpha]).toEqual([rank, alpha]);
    expect(lora.scaling).toBeCloseTo(scaling, 12);
    expect(lora.layers).toHaveLength(LLAMA_BASE.numLayers);
    let floats = 0;
    for (const pair of stored) {
      const loaded = lora.layers[pair.layer].get(pair.module as LoraModule)!;
      expect([loaded.rank, loaded.outFeatures, loaded.inFeatures]).toEqual([rank, pair.bShape[0], pair.aShape[1]]);
      expect(maxAbsDiff(loaded.a, pair.a)).toBe(0);
      expect(maxAbsDiff(loaded.b, pair.b.map((v) => v * scaling))).toBe(0);
      floats += pair.a.length + pair.b.length;
    }
    expect(stored).toHaveLength(LLAMA_BASE.numLayers * 7);
    expect(lora.bytes).toBe(floats * 4);
  });

  it('merging the loaded adapter gives W + (alpha/r)·B·A (float64) and moves the reference forward', async () => {
    const dir = join(tmp(), 'merge');
    const alpha = 12;
    const rank = 8;
    const stored = writeRandomPeftAdapter(dir, LLAMA_BASE, { rank, alpha, seed: 3, modules: ALL_MODULES });
    const base = randomWeights(LLAMA_BASE, 5);
    const lora = await loadLoraAdapter(dir, LLAMA_BASE, LIMITS);
    const merged = mergeLora(base, lora);
    for (const pair of stored) {
      const name = loraWeightName(pair.layer, pair.module as LoraModule);
      const delta = storedPairDelta(pair, alpha / rank);
      const expected = weight(base, name).map((w, i) => w + delta[i]);
      expect(maxAbsDiff(weight(merged, name), expected)).toBeLessThan(1e-6);
      expect(maxAbsDiff(delta, new Float64Array(delta.length))).toBeGreaterThan(1e-3);
    }
    const tokens = [1, 5, 9, 2];
    const baseLogits = referenceLoraForward(LLAMA_BASE, base, null, tokens).at(-1)!;
    const adaptedLogits = referenceLoraForward(LLAMA_BASE, base, lora, tokens).at(-1)!;
    expect(maxAbsDiff(baseLogits, adaptedLogits)).toBeGreaterThan(1e-3);
  });

  it('splits phi3 fused qkv_proj / gate_up_proj: A shared by the parts, B split by rows', async () => {
    const dir = join(tmp(), 'phi3');
    const scaling = 16 / 8;
    const stored = writeRandomPeftAdapter(dir, PHI3_BASE, { rank: 8, alpha: 16, seed: 11, modules: ALL_MODULES, fused: true });
    expect(stored.map((p) => p.module).sort()).toEqual(['down_proj', 'down_proj', 'gate_up_proj', 'gate_up_proj', 'o_proj', 'o_proj', 'qkv_proj', 'qkv_proj']);
    const lora = await loadLoraAdapter(dir, PHI3_BASE, LIMITS);
    const q = PHI3_BASE.numHeads * PHI3_BASE.headDim;
    const kv = PHI3_BASE.numKvHeads * PHI3_BASE.headDim;
    const ffn = PHI3_BASE.intermediateSize;
    const parts: Record<string, Array<[LoraModule, number, number]>> = {
      qkv_proj: [['q_proj', 0, q], ['k_proj', q, kv], ['v_proj', q + kv, kv]],
      gate_up_proj: [['gate_proj', 0, ffn], ['up_proj', ffn, ffn]],
    };
    for (const pair of stored) {
      for (const [module, row, rows] of parts[pair.module] ?? [[pair.module as LoraModule, 0, pair.bShape[0]]]) {
        const loaded = lora.layers[pair.layer].get(module)!;
        expect(loaded.outFeatures).toBe(rows);
        expect(maxAbsDiff(loaded.a, pair.a)).toBe(0);
        expect(maxAbsDiff(loaded.b, pair.b.subarray(row * 8, (row + rows) * 8).map((v) => v * scaling))).toBe(0);
      }
    }
    expect([...lora.layers[0].keys()].sort()).toEqual([...ALL_MODULES].sort());
  });

  it('reads F16 and BF16 files, and --lora-dtype float16 rounds the scaled pairs', async () => {
    const options = { rank: 8, alpha: 8, seed: 2, modules: ['q_proj', 'down_proj'] as LoraModule[] };
    const f32 = await loadLoraAdapter(writeTo(join(tmp(), 'f32'), 'F32'), LLAMA_BASE, LIMITS);
    for (const dtype of ['F16', 'BF16'] as const) {
      const lora = await loadLoraAdapter(writeTo(join(tmp(), dtype), dtype), LLAMA_BASE, LIMITS);
      const pair = lora.layers[1].get('q_proj')!;
      const exact = f32.layers[1].get('q_proj')!;
      const diff = maxAbsDiff(pair.a, exact.a);
      expect(diff).toBeGreaterThan(0);
      expect(diff).toBeLessThan(dtype === 'F16' ? 1e-4 : 2e-3);
    }
    const rounded = await loadLoraAdapter(join(tmp(), 'f32'), LLAMA_BASE, { ...LIMITS, dtype: 'float16' });
    const exact = f32.layers[0].get('down_proj')!;
    const pair = rounded.layers[0].get('down_proj')!;
    expect(Array.from(pair.b)).toEqual(Array.from(exact.b, (v) => f16ToF32(f32ToF16(v))));
    expect(maxAbsDiff(pair.b, exact.b)).toBeGreaterThan(0);

    function writeTo(dir: string, dtype: 'F32' | 'F16' | 'BF16'): string {
      writeRandomPeftAdapter(dir, LLAMA_BASE, options, dtype);
      return dir;
    }
  });

  it('adapts only the listed layers and modules (layers_to_transform honoured)', async () => {
    const dir = join(tmp(), 'some');
    writeRandomPeftAdapter(dir, LLAMA_BASE, { rank: 8, alpha: 4, seed: 4, modules: ['v_proj', 'up_proj'], layers: [1] });
    const lora = await loadLoraAdapter(dir, LLAMA_BASE, LIMITS);
    expect(lora.layers[0].size).toBe(0);
    expect([...lora.layers[1].keys()].sort()).toEqual(['up_proj', 'v_proj']);
  });
});
