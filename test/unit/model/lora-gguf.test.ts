// llama.cpp GGUF LoRA adapters load to the same LoraWeights as the PEFT form of the same adapter:
// llama's interleaved q/k B rows are put back in Hugging Face order, alpha/r is the scaling.
import { join } from 'node:path';
import { readGgufFile } from '../../../src/model/gguf/gguf-file';
import { gv, writeGguf } from '../../../src/model/gguf/writer';
import { loadLoraAdapter } from '../../../src/model/lora/load-lora';
import type { LoraModule } from '../../../src/model/lora/lora-weights';
import { randomLoraPairs, writeRandomGgufAdapter, writeRandomPeftAdapter, type RandomAdapterOptions } from '../../../src/model/lora/write-adapter';
import { readFloatsAsF32, withFile } from '../../../src/model/read-fully';
import type { DecoderArchConfig } from '../../../src/model/types';
import { ALL_MODULES, LIMITS, LLAMA_BASE, maxPairDiff, PHI3_BASE, tempDirPerSuite } from '../../helpers/lora-files';

describe('GGUF LoRA adapters', () => {
  const tmp = tempDirPerSuite('ortllm-lora-gguf-');

  const QWEN2_BASE: DecoderArchConfig = { ...LLAMA_BASE, architecture: 'qwen2' };
  it.each([
    { label: 'llama rank 8', base: LLAMA_BASE, options: { rank: 8, alpha: 16, seed: 21, modules: ALL_MODULES } },
    { label: 'llama rank 16 rslora', base: LLAMA_BASE, options: { rank: 16, alpha: 12, seed: 22, modules: ALL_MODULES, useRslora: true } },
    { label: 'qwen2 rank 16', base: QWEN2_BASE, options: { rank: 16, alpha: 32, seed: 23, modules: ALL_MODULES } },
    { label: 'phi3 fused rank 8', base: PHI3_BASE, options: { rank: 8, alpha: 4, seed: 24, modules: ALL_MODULES, fused: true } },
  ])('$label: the GGUF and PEFT forms load to equal LoraWeights', async ({ label, base, options }: { label: string; base: DecoderArchConfig; options: RandomAdapterOptions }) => {
    const dir = join(tmp(), label.replace(/ /g, '-'));
    writeRandomPeftAdapter(dir, base, options);
    writeRandomGgufAdapter(`${dir}.gguf`, base, options);
    const peft = await loadLoraAdapter(dir, base, LIMITS);
    const gguf = await loadLoraAdapter(`${dir}.gguf`, base, LIMITS);
    expect(gguf.rank).toBe(peft.rank);
    expect(gguf.scaling).toBeCloseTo(peft.scaling, 6);
    expect(gguf.bytes).toBe(peft.bytes);
    expect(maxPairDiff(peft, gguf)).toBeLessThan(1e-6 * peft.scaling);
  });

  it("stores llama's q/k B rows interleaved per head (convert_hf_to_gguf's permute), v rows as they are", async () => {
    const options = { rank: 8, alpha: 8, seed: 5, modules: ['q_proj', 'k_proj', 'v_proj'] as LoraModule[], layers: [0] };
    const file = join(tmp(), 'permuted.gguf');
    writeRandomGgufAdapter(file, LLAMA_BASE, options);
    const stored = randomLoraPairs(LLAMA_BASE, options);
    const gguf = await readGgufFile(file);
    const hd = LLAMA_BASE.headDim;
    for (const [module, tensorName, heads] of [['q_proj', 'attn_q', LLAMA_BASE.numHeads], ['k_proj', 'attn_k', LLAMA_BASE.numKvHeads], ['v_proj', 'attn_v', 0]] as const) {
      const pair = stored.find((p) => p.module === module)!;
      const tensor = gguf.tensors.find((t) => t.name === `blk.0.${tensorName}.weight.lora_b`)!;
      const rows = withFile(file, (fd) => readFloatsAsF32(fd, { offset: tensor.offset, byteLength: tensor.byteLength, count: pair.b.length, dtype: 'F32' }, tensor.name));
      const hfRowOf = (row: number) => {
        if (heads === 0) return row;
        const [h, within] = [Math.floor(row / hd), row % hd];
        return h * hd + (within % 2) * (hd / 2) + Math.floor(within / 2);
      };
      for (let row = 0; row < pair.bShape[0]; row++) {
        const from = hfRowOf(row);
        expect(Array.from(rows.subarray(row * 8, row * 8 + 8))).toEqual(Array.from(pair.b.subarray(from * 8, from * 8 + 8)));
      }
    }
  });

  it('reads F16 and Q8_0 adapters, and alpha 0 means scale 1 (llama.cpp)', async () => {
    const options = { rank: 8, alpha: 16, seed: 6, modules: ['o_proj', 'gate_proj'] as LoraModule[] };
    const exact = join(tmp(), 'f32.gguf');
    const half = join(tmp(), 'f16.gguf');
    writeRandomGgufAdapter(exact, LLAMA_BASE, options);
    writeRandomGgufAdapter(half, LLAMA_BASE, options, 'f16');
    const diff = maxPairDiff(await loadLoraAdapter(exact, LLAMA_BASE, LIMITS), await loadLoraAdapter(half, LLAMA_BASE, LIMITS));
    expect(diff).toBeGreaterThan(0);
    expect(diff).toBeLessThan(2e-3);

    // Q8_0 needs rows of whole 32-value blocks: rank 32 makes B's rows one block.
    const wide = { ...options, rank: 32 };
    const exactWide = join(tmp(), 'f32-r32.gguf');
    const q8 = join(tmp(), 'q8.gguf');
    writeRandomGgufAdapter(exactWide, LLAMA_BASE, wide);
    writeRandomGgufAdapter(q8, LLAMA_BASE, wide, 'q8_0');
    const wideLimits = { ...LIMITS, maxRank: 32 };
    const q8Diff = maxPairDiff(await loadLoraAdapter(exactWide, LLAMA_BASE, wideLimits), await loadLoraAdapter(q8, LLAMA_BASE, wideLimits));
    expect(q8Diff).toBeGreaterThan(0);
    expect(q8Diff).toBeLessThan(2e-3);

    const noAlpha = join(tmp(), 'alpha0.gguf');
    const [pair] = randomLoraPairs(LLAMA_BASE, { ...options, modules: ['o_proj'], layers: [1] });
    writeGguf(noAlpha, { 'general.architecture': gv.str('llama'), 'general.type': gv.str('adapter'), 'adapter.type': gv.str('lora'), 'adapter.lora.alpha': gv.f32(0) }, [
      { name: 'blk.1.attn_output.weight.lora_a', shape: [...pair.aShape], type: 'f32', data: pair.a },
      { name: 'blk.1.attn_output.weight.lora_b', shape: [...pair.bShape], type: 'f32', data: pair.b },
    ]);
    const lora = await loadLoraAdapter(noAlpha, LLAMA_BASE, LIMITS);
    expect(lora.scaling).toBe(1);
    expect(Array.from(lora.layers[1].get('o_proj')!.b)).toEqual(Array.from(pair.b));
  });
});
