// loadModel: loader choice by what MODEL points at, options honoured, clear errors.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGenerationConfig, parseGenerationConfig } from '../../../src/model/generation-config';
import { derivedContextLength } from '../../../src/model/architectures/decoder-family';
import { loadModel, planServedModel } from '../../../src/model/load-model';
import type { DecoderArchConfig } from '../../../src/model/types';
import { DUMMY_CONFIG } from '../../../src/model/dummy/dummy-model';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

const stories = sharedModel('stories260K.gguf');

let tmp: string;
beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-load-'))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('loadModel', () => {
  needs(stories).it('loads a GGUF file: weights, tokenizer from its vocabulary, no template, eos from the tokenizer', async () => {
    const model = await loadModel(loadOptions(stories));
    expect(model.source).toBe(stories);
    expect(model.onnxPath).toBeNull();
    expect(model.weights!.has('model.layers.4.mlp.down_proj.weight')).toBe(true);
    expect(model.tokenizer!.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(model.chatTemplate).toBeNull(); // stories260K has none: chat answers 400
    expect(model.eosTokenIds).toEqual([2]);
    expect(model.contextLength).toBe(2048);
    expect(model.generationDefaults).toEqual({});
  });

  needs(stories).it('metadata-only load (the HTTP side) reads no weights and is cheap', async () => {
    const started = performance.now();
    const model = await loadModel(loadOptions(stories, { loadWeights: false }));
    expect(model.weights).toBeNull();
    expect(model.config.numLayers).toBe(5);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  needs(stories).it('--chat-template (file or inline) overrides the model template', async () => {
    const file = join(tmp, 'template.jinja');
    writeFileSync(file, '{{ bos_token }}{{ messages[0].content }}');
    const render = (m: Awaited<ReturnType<typeof loadModel>>) =>
      m.chatTemplate!.render([{ role: 'user', content: 'x' }], { addGenerationPrompt: false, continueFinalMessage: false });
    expect(render(await loadModel(loadOptions(stories, { loadWeights: false, chatTemplate: file })))).toBe('<s>x');
    expect(render(await loadModel(loadOptions(stories, { loadWeights: false, chatTemplate: '[{{ messages[0].role }}]' })))).toBe('[user]');
  });

  needs(stories).it('--generation-config with a folder reads that folder', async () => {
    const folder = join(tmp, 'gen');
    mkdirSync(folder);
    writeFileSync(join(folder, 'generation_config.json'), JSON.stringify({ temperature: 0.6, eos_token_id: 9, repetition_penalty: 1.1 }));
    const model = await loadModel(loadOptions(stories, { loadWeights: false, generationConfig: folder }));
    expect(model.generationDefaults).toEqual({ temperature: 0.6, repetition_penalty: 1.1 });
    expect(model.eosTokenIds).toEqual([2, 9]);
  });

  it('says clearly what is wrong with MODEL', async () => {
    await expect(loadModel(loadOptions(join(tmp, 'nope.gguf')))).rejects.toThrow(/model path .*nope\.gguf does not exist/);
    const text = join(tmp, 'model.bin');
    writeFileSync(text, 'not a model');
    await expect(loadModel(loadOptions(text))).rejects.toThrow(/neither a GGUF file nor a Hugging Face model directory/);
    await expect(loadModel(loadOptions(tmp))).rejects.toThrow(/no config\.json; not a Hugging Face model directory/);
    await expect(loadModel(loadOptions(null, { generationConfig: join(tmp, 'missing') }))).rejects.toThrow(/--generation-config .*missing: not 'auto', 'vllm' or an existing folder/);
  });
});

describe('generation config', () => {
  it('keeps vLLM keys, renames nothing, reads eos ids as int or list', () => {
    expect(parseGenerationConfig({ temperature: 0.6, top_p: 0.9, top_k: 20, min_p: 0.05, do_sample: true, eos_token_id: [128001, 128009] })).toEqual({
      defaults: { temperature: 0.6, top_p: 0.9, top_k: 20, min_p: 0.05 },
      eosTokenIds: [128001, 128009],
    });
    expect(parseGenerationConfig({ temperature: 1.0, top_p: 1.0, repetition_penalty: 1.0, eos_token_id: 2 })).toEqual({ defaults: {}, eosTokenIds: [2] });
    expect(loadGenerationConfig('auto', null)).toEqual({ defaults: {}, eosTokenIds: [] });
    expect(loadGenerationConfig('vllm', tmp)).toEqual({ defaults: {}, eosTokenIds: [] });
  });
});

describe('context length', () => {
  it('stretches by linear / yarn RoPE factors as vLLM derives max_model_len, not by llama3', () => {
    const base = { ...DUMMY_CONFIG, maxPositionEmbeddings: 4096 };
    expect(derivedContextLength(base)).toBe(4096);
    expect(derivedContextLength({ ...base, ropeScaling: { rope_type: 'linear', factor: 2 } })).toBe(8192);
    expect(derivedContextLength({ ...base, ropeScaling: { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 32768 } })).toBe(131072);
    expect(derivedContextLength({ ...base, ropeScaling: { rope_type: 'llama3', factor: 8, original_max_position_embeddings: 8192 } })).toBe(4096);
  });
});

describe('--tokenizer and --override-generation-config', () => {
  needs(stories).it('takes the tokenizer and chat template from another GGUF file or HF directory', async () => {
    const { writeHfDirFromGguf } = await import('../../helpers/write-hf-dir');
    const dir = join(tmp, 'tokenizer-hf');
    await writeHfDirFromGguf(stories, dir);
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: '{{ messages[0].content }}!', bos_token: '<s>', eos_token: '</s>' }));
    const model = await loadModel(loadOptions(null, { tokenizer: dir }));
    expect(model.config).toEqual(DUMMY_CONFIG); // the model stays the built-in one
    expect(model.tokenizer!.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(model.chatTemplate!.render([{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true, continueFinalMessage: false })).toBe('Hi!');
    await expect(loadModel(loadOptions(null, { tokenizer: join(tmp, 'missing') }))).rejects.toThrow(/--tokenizer .*does not exist/);
  });

  it('merges --override-generation-config over the file and refuses unknown keys', async () => {
    const dir = join(tmp, 'gen-override');
    mkdirSync(dir);
    writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ temperature: 0.6, top_p: 0.9 }));
    const model = await loadModel(loadOptions(null, { generationConfig: dir, overrideGenerationConfig: { temperature: 0.2, top_k: 50 } }));
    expect(model.generationDefaults).toEqual({ temperature: 0.2, top_p: 0.9, top_k: 50 });
    await expect(loadModel(loadOptions(null, { overrideGenerationConfig: { seed: 1 } }))).rejects.toThrow(/'seed' is not one of/);
  });
});

describe('--hf-overrides', () => {
  needs(stories).it('applies rope_theta, rope_scaling and max_position_embeddings over a GGUF config (context length follows)', async () => {
    const model = await loadModel(loadOptions(stories, {
      loadWeights: false,
      hfOverrides: { rope_theta: 500000, rope_scaling: { type: 'yarn', factor: 4, original_max_position_embeddings: 2048 } },
    }));
    expect((model.config as DecoderArchConfig).ropeTheta).toBe(500000);
    expect((model.config as DecoderArchConfig).ropeScaling).toMatchObject({ rope_type: 'yarn', factor: 4 });
    expect(model.contextLength).toBe(8192);
    const longer = await loadModel(loadOptions(stories, { loadWeights: false, hfOverrides: { max_position_embeddings: 4096 } }));
    expect(longer.contextLength).toBe(4096);
    await expect(loadModel(loadOptions(stories, { loadWeights: false, hfOverrides: { hidden_size: 8 } }))).rejects.toThrow(/'hidden_size' is not applied here/);
    await expect(loadModel(loadOptions(stories, { loadWeights: false, hfOverrides: { rope_theta: -1 } }))).rejects.toThrow(/rope_theta must be a positive number/);
  });

  needs(stories).it('is_matryoshka and matryoshka_dimensions declare Matryoshka support for any pooling model, checked', async () => {
    const embed = (hfOverrides: Record<string, unknown>) =>
      planServedModel(loadOptions(stories, { loadWeights: false, hfOverrides, serving: { runner: 'pooling', convert: 'embed', poolerConfig: null } }));
    expect((await embed({})).pooler).toMatchObject({ matryoshka: false, matryoshkaDimensions: null });
    expect((await embed({ is_matryoshka: true })).pooler).toMatchObject({ matryoshka: true, matryoshkaDimensions: null });
    expect((await embed({ matryoshka_dimensions: [16, 32], rope_theta: 20000 })).pooler).toMatchObject({ matryoshka: true, matryoshkaDimensions: [16, 32] });
    await expect(embed({ is_matryoshka: 'yes' })).rejects.toThrow('--hf-overrides: is_matryoshka must be true or false, got "yes"');
    await expect(embed({ matryoshka_dimensions: [0] })).rejects.toThrow(/matryoshka_dimensions must be a non-empty list of positive integers/);
    await expect(embed({ hidden_size: 8 })).rejects.toThrow(/supported for .*: .*is_matryoshka, matryoshka_dimensions\)/);
  });
});
