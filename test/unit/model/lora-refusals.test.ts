// Every adapter the server cannot serve is refused with a LoraLoadError that says why.
import { mkdirSync, readFileSync, truncateSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeGguf, gv } from '../../../src/model/gguf/writer';
import { writeSafetensors } from '../../../src/model/hf/safetensors-writer';
import { loadLoraAdapter } from '../../../src/model/lora/load-lora';
import { LoraLoadError, type LoraModule } from '../../../src/model/lora/lora-weights';
import { writeRandomGgufAdapter, writeRandomPeftAdapter } from '../../../src/model/lora/write-adapter';
import type { DecoderArchConfig } from '../../../src/model/types';
import { ALL_MODULES, LIMITS, LLAMA_BASE, tempDirPerSuite } from '../../helpers/lora-files';

const OPTIONS = { rank: 8, alpha: 16, seed: 1, modules: ALL_MODULES };

async function refusal(path: string, base: DecoderArchConfig = LLAMA_BASE, limits = LIMITS): Promise<string> {
  try {
    await loadLoraAdapter(path, base, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(LoraLoadError);
    return (err as Error).message;
  }
  throw new Error(`${path} loaded, but should have been refused`);
}

describe('LoRA adapters that are refused', () => {
  const tmp = tempDirPerSuite('ortllm-lora-refuse-');
  let counter = 0;

  /** A valid PEFT adapter with adapter_config.json changed by `edit`. */
  function peftWith(edit: (config: Record<string, unknown>) => void, options = OPTIONS, base = LLAMA_BASE): string {
    const dir = join(tmp(), `peft-${counter++}`);
    writeRandomPeftAdapter(dir, base, options);
    const path = join(dir, 'adapter_config.json');
    const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    edit(config);
    writeFileSync(path, JSON.stringify(config));
    return dir;
  }

  it.each([
    ['modules_to_save', (c: Record<string, unknown>) => (c.modules_to_save = ['lm_head']), /only supports modules_to_save being None/],
    ['bias', (c: Record<string, unknown>) => (c.bias = 'lora_only'), /bias is "lora_only".*only bias 'none'/],
    ['DoRA', (c: Record<string, unknown>) => (c.use_dora = true), /vLLM does not yet support DoRA/],
    ['rank_pattern', (c: Record<string, unknown>) => (c.rank_pattern = { q_proj: 4 }), /rank_pattern is set; per-module ranks/],
    ['alpha_pattern', (c: Record<string, unknown>) => (c.alpha_pattern = { q_proj: 4 }), /alpha_pattern is set/],
    ['target_modules', (c: Record<string, unknown>) => (c.target_modules = ['q_proj']), /self_attn\.k_proj, which adapter_config.json's target_modules does not name/],
    ['target_modules regex', (c: Record<string, unknown>) => (c.target_modules = '.*\\.(q|k|v|o)_proj'), /mlp\.\w+_proj, which adapter_config.json's target_modules does not name/],
    ['layers_to_transform', (c: Record<string, unknown>) => (c.layers_to_transform = [0]), /adapts layer 1, which is not in layers_to_transform/],
    ['peft_type', (c: Record<string, unknown>) => (c.peft_type = 'IA3'), /peft_type is "IA3"; only LORA/],
    ['r', (c: Record<string, unknown>) => (c.r = 0), /r must be a positive integer/],
    ['missing fields', (c: Record<string, unknown>) => delete c.lora_alpha && delete c.target_modules, /Missing required configuration fields: lora_alpha, target_modules/],
    ['context_length', (c: Record<string, unknown>) => (c.context_length = 16384), /context_length is set \(a long-context LoRA/],
  ])('adapter_config.json: %s', async (_, edit, message) => {
    expect(await refusal(peftWith(edit))).toMatch(message);
  });

  it('a regex target_modules that covers the file is accepted', async () => {
    const dir = peftWith((c) => (c.target_modules = 'model\\.layers\\.\\d+\\.(self_attn|mlp)\\.\\w+_proj'));
    await expect(loadLoraAdapter(dir, LLAMA_BASE, LIMITS)).resolves.toMatchObject({ rank: 8 });
  });

  it('rank above --max-lora-rank, in vLLM words', async () => {
    const dir = join(tmp(), 'rank16');
    writeRandomPeftAdapter(dir, LLAMA_BASE, { ...OPTIONS, rank: 16 });
    expect(await refusal(dir, LLAMA_BASE, { maxRank: 8, dtype: 'auto' })).toBe('LoRA rank 16 is greater than max_lora_rank 8.');
    const file = join(tmp(), 'rank16.gguf');
    writeRandomGgufAdapter(file, LLAMA_BASE, { ...OPTIONS, rank: 16 });
    expect(await refusal(file, LLAMA_BASE, { maxRank: 8, dtype: 'auto' })).toBe('LoRA rank 16 is greater than max_lora_rank 8.');
  });

  it('missing paths and files', async () => {
    expect(await refusal(join(tmp(), 'nowhere'))).toMatch(/^No adapter found for .*nowhere/);
    const empty = join(tmp(), 'empty');
    mkdirSync(empty);
    expect(await refusal(empty)).toMatch(/No adapter found for .*empty \(no adapter_config.json\)/);
    const binOnly = join(tmp(), 'bin-only');
    mkdirSync(binOnly);
    writeFileSync(join(binOnly, 'adapter_config.json'), JSON.stringify({ r: 8, lora_alpha: 16, target_modules: ['q_proj'] }));
    writeFileSync(join(binOnly, 'adapter_model.bin'), 'pickle');
    expect(await refusal(binOnly)).toMatch(/only adapter_model.bin \(a torch pickle\) is present; it cannot be read safely/);
    const text = join(tmp(), 'notes.txt');
    writeFileSync(text, 'hello');
    expect(await refusal(text)).toMatch(/not a LoRA adapter/);
  });

  it('truncated files', async () => {
    const file = join(tmp(), 'truncated.gguf');
    writeRandomGgufAdapter(file, LLAMA_BASE, OPTIONS);
    truncateSync(file, statSync(file).size - 100);
    expect(await refusal(file)).toMatch(/truncated\.gguf: .*runs past the end of the file/);
    const dir = join(tmp(), 'truncated');
    writeRandomPeftAdapter(dir, LLAMA_BASE, OPTIONS);
    const weights = join(dir, 'adapter_model.safetensors');
    truncateSync(weights, statSync(weights).size - 100);
    expect(await refusal(dir)).toMatch(/adapter_model\.safetensors: tensor .* runs past the end of the file/);
  });

  it('a base model of another shape, a layer it lacks, MoE experts', async () => {
    const dir = join(tmp(), 'other-shape');
    writeRandomPeftAdapter(dir, { ...LLAMA_BASE, intermediateSize: 128 }, OPTIONS);
    expect(await refusal(dir)).toMatch(/adapts a \[128, 64\] linear, but the base model's is \[96, 64\].*another base model/);
    const deep = join(tmp(), 'deep');
    writeRandomPeftAdapter(deep, { ...LLAMA_BASE, numLayers: 3 }, { ...OPTIONS, layers: [2] });
    expect(await refusal(deep)).toMatch(/adapts layer 2, but the base model has 2 layers/);
    const moeBase: DecoderArchConfig = { ...LLAMA_BASE, numExperts: 4, numExpertsPerToken: 2, expertIntermediateSize: 32 };
    const mlp = join(tmp(), 'moe-mlp');
    writeRandomPeftAdapter(mlp, LLAMA_BASE, { ...OPTIONS, modules: ['up_proj'] as LoraModule[] });
    expect(await refusal(mlp, moeBase)).toMatch(/mixture-of-experts layer of the base model; LoRA on MoE experts is not supported/);
    const attention = join(tmp(), 'moe-attention');
    writeRandomPeftAdapter(attention, LLAMA_BASE, { ...OPTIONS, modules: ['q_proj', 'o_proj'] as LoraModule[] });
    await expect(loadLoraAdapter(attention, moeBase, LIMITS)).resolves.toMatchObject({ rank: 8 });
  });

  it('tensors for the LM head, embeddings, experts, DoRA magnitudes, or a half pair', async () => {
    const tensor = (shape: number[]) => ({ kind: 'f32' as const, shape, data: new Float32Array(shape[0] * shape[1]) });
    const cases: Array<[Array<{ name: string; shape: number[] }>, RegExp]> = [
      [[{ name: 'base_model.model.lm_head.lora_A.weight', shape: [8, 64] }, { name: 'base_model.model.lm_head.lora_B.weight', shape: [64, 8] }], /LM head \(vLLM's extra vocabulary\) is not supported/],
      [[{ name: 'base_model.model.model.embed_tokens.lora_embedding_A', shape: [8, 64] }], /embeddings \(vLLM's extra vocabulary\) is not supported/],
      [[{ name: 'base_model.model.model.layers.0.mlp.experts.1.up_proj.lora_A.weight', shape: [8, 64] }, { name: 'base_model.model.model.layers.0.mlp.experts.1.up_proj.lora_B.weight', shape: [32, 8] }], /LoRA on MoE experts is not supported/],
      [[{ name: 'base_model.model.model.layers.0.mlp.fc1.lora_A.weight', shape: [8, 64] }, { name: 'base_model.model.model.layers.0.mlp.fc1.lora_B.weight', shape: [96, 8] }], /expected target modules in \[q_proj, .*gate_up_proj\] but received \[fc1\]/],
      [[{ name: 'base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector', shape: [64, 1] }], /does not yet support DoRA/],
      [[{ name: 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight', shape: [8, 64] }], /has lora_A but no lora_B/],
    ];
    for (const [tensors, message] of cases) {
      const dir = join(tmp(), `tensors-${counter++}`);
      mkdirSync(dir);
      writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify({ r: 8, lora_alpha: 16, target_modules: 'all-linear' }));
      writeSafetensors(join(dir, 'adapter_model.safetensors'), tensors.map((t) => ({ name: t.name, tensor: tensor(t.shape) })), 'F32');
      expect(await refusal(dir)).toMatch(message);
    }
  });

  it('GGUF: a model file, another architecture, another adapter type, LM head tensors', async () => {
    const model = join(tmp(), 'model.gguf');
    writeGguf(model, { 'general.architecture': gv.str('llama'), 'general.type': gv.str('model') }, []);
    expect(await refusal(model)).toMatch(/not a LoRA adapter: general.type is "model", expected 'adapter'/);
    const qwen = join(tmp(), 'qwen.gguf');
    writeRandomGgufAdapter(qwen, { ...LLAMA_BASE, architecture: 'qwen2' }, OPTIONS);
    expect(await refusal(qwen)).toMatch(/adapter is for architecture 'qwen2' but the base model is 'llama'/);
    const head = join(tmp(), 'head.gguf');
    const adapterMeta = { 'general.architecture': gv.str('llama'), 'general.type': gv.str('adapter'), 'adapter.type': gv.str('lora'), 'adapter.lora.alpha': gv.f32(16) };
    const zeros = (n: number) => new Float32Array(n);
    writeGguf(head, adapterMeta, [
      { name: 'output.weight.lora_a', shape: [8, 64], type: 'f32', data: zeros(8 * 64) },
      { name: 'output.weight.lora_b', shape: [64, 8], type: 'f32', data: zeros(64 * 8) },
    ]);
    expect(await refusal(head)).toMatch(/output.weight is adapted; LoRA on the embeddings or the LM head/);
    const cvec = join(tmp(), 'cvec.gguf');
    writeGguf(cvec, { ...adapterMeta, 'adapter.type': gv.str('cvec') }, []);
    expect(await refusal(cvec)).toMatch(/adapter.type is "cvec", only 'lora'/);
    const half = join(tmp(), 'half.gguf');
    writeGguf(half, adapterMeta, [{ name: 'blk.0.attn_q.weight.lora_a', shape: [8, 64], type: 'f32', data: zeros(8 * 64) }]);
    expect(await refusal(half)).toMatch(/pair for 'blk.0.attn_q.weight' is missing one component/);
  });
});
