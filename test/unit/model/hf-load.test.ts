// Hugging Face directory loader: stories260K written as an HF directory must load to the same weights.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import { hfArchitecture } from '../../../src/model/hf/hf-config';
import type { DecoderArchConfig } from '../../../src/model/types';
import { loadHfModel } from '../../../src/model/hf/load-hf';
import { loadModel } from '../../../src/model/load-model';
import type { ModelWeights } from '../../../src/model/types';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { encode, writeHfDirFromGguf, writeSafetensors } from '../../helpers/write-hf-dir';

const stories = sharedModel('stories260K.gguf');

let tmp: string;
let ggufWeights: ModelWeights;
beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-hf-'))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Each weight as it would come back from `dtype` (bitwise for F32). */
function expectSameWeights(weights: ModelWeights, dtype: 'F32' | 'F16' | 'BF16'): void {
  expect(weights.names().sort()).toEqual(ggufWeights.names().sort());
  for (const name of ggufWeights.names()) {
    const want = ggufWeights.get(name);
    const got = weights.get(name);
    if (want.kind !== 'f32' || got.kind !== 'f32') throw new Error(`${name}: expected f32`);
    expect([name, got.shape]).toEqual([name, want.shape]);
    const rounded = dtype === 'F32' ? want.data : decodeRounded(want.data, dtype);
    expect([name, Buffer.from(got.data.buffer).equals(Buffer.from(rounded.buffer))]).toEqual([name, true]);
  }
}

/** What F16/BF16 storage turns values into, decoded independently of the loader's decoder. */
function decodeRounded(values: Float32Array, dtype: 'F16' | 'BF16'): Float32Array {
  const halves = new Uint16Array(encode(values, dtype).buffer);
  return Float32Array.from(halves, (h) => {
    if (dtype === 'BF16') return new Float32Array(new Uint32Array([h << 16]).buffer)[0];
    const exp = (h >> 10) & 0x1f;
    const mant = h & 0x3ff;
    const sign = h & 0x8000 ? -1 : 1;
    return exp === 0 ? sign * mant * 2 ** -24 : sign * (1 + mant / 1024) * 2 ** (exp - 15);
  });
}

needs(stories).describe('HF directory from stories260K', () => {
  beforeAll(async () => {
    ggufWeights = (await loadGgufModel(stories, { loadWeights: true })).weights!;
  });

  it('loads F32 model.safetensors to exactly the GGUF path weights and config', async () => {
    const dir = join(tmp, 'f32');
    await writeHfDirFromGguf(stories, dir);
    const hf = loadHfModel(dir, { loadWeights: true });
    expect(hf.onnxPath).toBeNull();
    const gguf = await loadGgufModel(stories, { loadWeights: false });
    expect(hf.config).toEqual(gguf.config);
    expectSameWeights(hf.weights!, 'F32');
  });

  it.each([
    ['F16', 1],
    ['BF16', 3],
  ] as const)('loads %s weights over %d file(s)', async (dtype, shards) => {
    const dir = join(tmp, `${dtype}-${shards}`);
    await writeHfDirFromGguf(stories, dir, { dtype, shards });
    expectSameWeights(loadHfModel(dir, { loadWeights: true }).weights!, dtype);
  });

  it('loadModel: tokenizer, template, generation_config and EOS ids from the directory', async () => {
    const dir = join(tmp, 'full');
    await writeHfDirFromGguf(stories, dir);
    writeFileSync(join(dir, 'chat_template.jinja'), '{% for m in messages %}{{ bos_token }}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}');
    writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ temperature: 0.7, top_p: 0.9, top_k: 50, eos_token_id: [2, 7], max_new_tokens: 64 }));
    const model = await loadModel(loadOptions(dir));
    const fromGguf = await loadModel(loadOptions(stories, { loadWeights: false }));
    expect(model.source).toBe(dir);
    expect(model.tokenizer!.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(model.tokenizer!.encode('Once upon a time, Zoé saw 🙂')).toEqual(fromGguf.tokenizer!.encode('Once upon a time, Zoé saw 🙂'));
    expect(model.chatTemplate!.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: false, continueFinalMessage: false })).toBe('<s>[user] hi</s>');
    // top_k 50 equals transformers' default, so (as in vLLM) it is not a default.
    expect(model.generationDefaults).toEqual({ temperature: 0.7, top_p: 0.9, max_new_tokens: 64 });
    expect(model.eosTokenIds.sort()).toEqual([2, 7]);
    expect(model.contextLength).toBe(2048);
    const vllmDefaults = await loadModel(loadOptions(dir, { generationConfig: 'vllm', loadWeights: false }));
    expect([vllmDefaults.generationDefaults, vllmDefaults.eosTokenIds, vllmDefaults.weights]).toEqual([{}, [2], null]);
    const noTokenizer = await loadModel(loadOptions(dir, { skipTokenizer: true, loadWeights: false }));
    expect([noTokenizer.tokenizer, noTokenizer.chatTemplate, noTokenizer.eosTokenIds]).toEqual([null, null, [2, 7]]);
  });

  it('takes tokenizer_config.chat_template when there is no chat_template.jinja', async () => {
    const dir = join(tmp, 'config-template');
    await writeHfDirFromGguf(stories, dir);
    const configPath = join(dir, 'tokenizer_config.json');
    const tokenizerConfig = JSON.parse(readFileSync(configPath, 'utf8'));
    writeFileSync(configPath, JSON.stringify({ ...tokenizerConfig, chat_template: '{{ messages[0].content }}!' }));
    const model = await loadModel(loadOptions(dir, { loadWeights: false }));
    expect(model.chatTemplate!.render([{ role: 'user', content: 'hey' }], { addGenerationPrompt: true, continueFinalMessage: false })).toBe('hey!');
  });

  it('picks the tool_use template variant for requests with tools (tokenizer_config list, additional_chat_templates/)', async () => {
    const dir = join(tmp, 'named-templates');
    await writeHfDirFromGguf(stories, dir);
    const configPath = join(dir, 'tokenizer_config.json');
    const tokenizerConfig = JSON.parse(readFileSync(configPath, 'utf8'));
    writeFileSync(configPath, JSON.stringify({ ...tokenizerConfig, chat_template: [{ name: 'default', template: 'plain' }, { name: 'tool_use', template: 'tools:{% if tools %}{{ tools | length }}{% else %}0{% endif %}' }] }));
    const hi = [{ role: 'user', content: 'hi' }];
    const opts = { addGenerationPrompt: true, continueFinalMessage: false };
    const model = await loadModel(loadOptions(dir, { loadWeights: false }));
    expect(model.chatTemplate!.render(hi, opts)).toBe('plain');
    expect(model.chatTemplate!.render(hi, { ...opts, tools: [{}, {}] })).toBe('tools:2');
    // --chat-template may name the variant; it then serves every request.
    const named = await loadModel(loadOptions(dir, { loadWeights: false, chatTemplate: 'tool_use' }));
    expect(named.chatTemplate!.render(hi, { ...opts, tools: [{}] })).toBe('tools:1');
    expect(named.chatTemplate!.render(hi, opts)).toBe('tools:0');
    // transformers' newer layout: chat_template.jinja plus additional_chat_templates/<name>.jinja.
    writeFileSync(join(dir, 'chat_template.jinja'), 'jinja default');
    mkdirSync(join(dir, 'additional_chat_templates'));
    writeFileSync(join(dir, 'additional_chat_templates', 'tool_use.jinja'), 'jinja tools');
    const files = await loadModel(loadOptions(dir, { loadWeights: false }));
    expect([files.chatTemplate!.render(hi, opts), files.chatTemplate!.render(hi, { ...opts, tools: [{}] })]).toEqual(['jinja default', 'jinja tools']);
  });

  it('fails clearly on unsupported dtypes, unknown tensors and missing weights', async () => {
    const dir = join(tmp, 'bad');
    await writeHfDirFromGguf(stories, dir);
    const tensors = ggufWeights.names().map((name) => ({ name, tensor: ggufWeights.get(name) }));
    writeSafetensors(join(dir, 'model.safetensors'), tensors.filter((t) => t.name !== 'model.norm.weight'), 'F32');
    expect(() => loadHfModel(dir, { loadWeights: false })).toThrow(/missing weight model\.norm\.weight/);
    writeSafetensors(join(dir, 'model.safetensors'), [...tensors, { name: 'model.layers.0.mlp.experts.weight', tensor: ggufWeights.get('model.norm.weight') }], 'F32');
    expect(() => loadHfModel(dir, { loadWeights: false })).toThrow(/tensor model\.layers\.0\.mlp\.experts\.weight is not part of a llama decoder/);
    // Patch one tensor's dtype in the header to I8 (same byte length as F32 would not matter: dtype is checked first).
    writeSafetensors(join(dir, 'model.safetensors'), tensors, 'F32');
    const bytes = readFileSync(join(dir, 'model.safetensors'));
    const headerEnd = 8 + Number(bytes.readBigUInt64LE(0));
    const header = bytes.subarray(8, headerEnd).toString().replace('"model.norm.weight":{"dtype":"F32"', '"model.norm.weight":{"dtype":"I32"');
    writeFileSync(join(dir, 'model.safetensors'), Buffer.concat([bytes.subarray(0, 8), Buffer.from(header), bytes.subarray(headerEnd)]));
    expect(() => loadHfModel(dir, { loadWeights: false })).toThrow(/tensor model\.norm\.weight has dtype I32, which is not supported/);
  });
});

describe('HF config.json', () => {
  const hfArchConfig = (json: Record<string, unknown>, source: string, hasLmHead: boolean) =>
    hfArchitecture(json, { source, hasTensor: (name) => name !== 'lm_head.weight' || hasLmHead }).config as DecoderArchConfig;
  const base = { hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, vocab_size: 100, max_position_embeddings: 32768 };

  it('maps llama, mistral (sliding window over every layer) and qwen2 (q/k/v biases)', () => {
    const llama = hfArchConfig({ ...base, model_type: 'llama', rope_scaling: { type: 'linear', factor: 2 } }, 'x', true);
    expect(llama).toMatchObject({ architecture: 'llama', numKvHeads: 4, headDim: 16, ropeTheta: 10000, attentionBias: false, tieWordEmbeddings: false, maxPositionEmbeddings: 32768 });
    expect(llama.ropeScaling).toEqual({ rope_type: 'linear', factor: 2 });
    const mistral = hfArchConfig({ ...base, model_type: 'mistral', sliding_window: 4096, num_key_value_heads: 2 }, 'x', true);
    expect(mistral).toMatchObject({ architecture: 'llama', numKvHeads: 2, maxPositionEmbeddings: 32768, slidingWindow: 4096 });
    expect(mistral.layerTypes).toBeUndefined();
    const qwen2 = hfArchConfig({ ...base, model_type: 'qwen2', sliding_window: 4096, use_sliding_window: false, tie_word_embeddings: true, rope_theta: 1e6 }, 'x', false);
    expect(qwen2).toMatchObject({ architecture: 'qwen2', attentionBias: true, tieWordEmbeddings: true, ropeTheta: 1e6, maxPositionEmbeddings: 32768, ropeScaling: null });
    expect(qwen2.slidingWindow).toBeUndefined();
    const llama3 = hfArchConfig({ ...base, model_type: 'llama', rope_parameters: { rope_type: 'llama3', rope_theta: 500000, factor: 8 } }, 'x', true);
    expect([llama3.ropeTheta, llama3.ropeScaling]).toEqual([500000, { rope_type: 'llama3', factor: 8 }]);
  });

  it('reads the window per layer: layer_types as listed, else HF defaults (qwen2/qwen3 from max_window_layers on)', () => {
    const qwen2 = hfArchConfig({ ...base, num_hidden_layers: 4, model_type: 'qwen2', sliding_window: 64, use_sliding_window: true, max_window_layers: 2 }, 'x', true);
    expect(qwen2).toMatchObject({ slidingWindow: 64, layerTypes: ['full_attention', 'full_attention', 'sliding_attention', 'sliding_attention'] });
    const qwen3 = hfArchConfig({ ...base, model_type: 'qwen3', head_dim: 32, sliding_window: 64, use_sliding_window: true }, 'x', true);
    // max_window_layers defaults to 28: no layer of a 2-layer model slides.
    expect(qwen3).toMatchObject({ architecture: 'qwen3', qkNorm: true, headDim: 32, attentionBias: false, slidingWindow: 64, layerTypes: ['full_attention', 'full_attention'] });
    const ministral = hfArchConfig({ ...base, model_type: 'ministral', sliding_window: 32, layer_types: ['sliding_attention', 'full_attention'] }, 'x', true);
    expect(ministral).toMatchObject({ architecture: 'llama', slidingWindow: 32, layerTypes: ['sliding_attention', 'full_attention'] });
    expect(() => hfArchConfig({ ...base, model_type: 'ministral', sliding_window: 32, layer_types: ['sliding_attention'] }, '/m', true)).toThrow(/\/m: config.json layer_types must list 2/);
  });

  it('rejects other model types', () => {
    expect(() => hfArchConfig({ ...base, model_type: 'gemma2' }, '/m', true)).toThrow(/\/m: model_type "gemma2" is not supported/);
  });
});

describe('ONNX exports', () => {
  const config = { model_type: 'llama', hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, vocab_size: 100 };

  it('finds onnx/model.onnx with past_key_values inputs and loads no weights', () => {
    const dir = join(tmp, 'onnx');
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    // Enough of a protobuf for the scan: input names are plain strings in the file, here past an 8 MiB boundary.
    writeFileSync(join(dir, 'onnx/model.onnx'), Buffer.concat([Buffer.alloc((8 << 20) - 10), Buffer.from('\x0a\x15past_key_values.0.key')]));
    const model = loadHfModel(dir, { loadWeights: true });
    expect(model.onnxPath).toBe(join(dir, 'onnx/model.onnx'));
    expect(model.weights).toBeNull();
    expect(model.config.numLayers).toBe(2);
  });

  it('rejects an export without a KV cache, and a directory with no weights at all', () => {
    const dir = join(tmp, 'onnx-no-kv');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    expect(() => loadHfModel(dir, { loadWeights: true })).toThrow(/no model\.safetensors/);
    writeFileSync(join(dir, 'model.onnx'), 'input_ids attention_mask logits');
    expect(() => loadHfModel(dir, { loadWeights: true })).toThrow(/no past_key_values/);
  });
});
