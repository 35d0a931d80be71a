/** @jest-environment ./test/helpers/ort-environment.js */
// gpt-oss's config and weight names: openai/gpt-oss-20b's config.json as published, llama.cpp's
// GGUF keys and tensor names (convert_hf_to_gguf's GptOssModel, llama-arch's LLM_ARCH_OPENAI_MOE),
// and the start-up refusal of the in-graph runner.
import { gptOssConfig, randomGptOssWeights } from '../../../bench/random-gpt-oss';
import { gptOss } from '../../../src/model/architectures/gpt-oss';
import type { GgufFile } from '../../../src/model/gguf/gguf-file';
import { gptOssGgufConfig, type GptOssArchConfig } from '../../../src/model/gpt-oss/gpt-oss-config';
import { gptOssCanonicalName, gptOssGgufName, gptOssWeightSpecs } from '../../../src/model/gpt-oss/gpt-oss-weights';
import { hfArchitecture } from '../../../src/model/hf/hf-config';
import { quantizedQ8 } from '../../../bench/random-llama';
import { createRunner } from '../../../src/model/runner';
import { chooseDecoderBackend } from '../../../src/model/runner/backends/choose-backend';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { LoadedModel } from '../../../src/model/types';

/** openai/gpt-oss-20b's config.json (its fields and values as published). */
const GPT_OSS_20B = {
  architectures: ['GptOssForCausalLM'],
  attention_bias: true,
  attention_dropout: 0.0,
  eos_token_id: 200002,
  experts_per_token: 4,
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2880,
  initial_context_length: 4096,
  initializer_range: 0.02,
  intermediate_size: 2880,
  layer_types: Array.from({ length: 24 }, (_, l) => (l % 2 === 0 ? 'sliding_attention' : 'full_attention')),
  max_position_embeddings: 131072,
  model_type: 'gpt_oss',
  num_attention_heads: 64,
  num_experts_per_tok: 4,
  num_hidden_layers: 24,
  num_key_value_heads: 8,
  num_local_experts: 32,
  output_router_logits: false,
  pad_token_id: 199999,
  quantization_config: { modules_to_not_convert: ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head'], quant_method: 'mxfp4' },
  rms_norm_eps: 1e-5,
  rope_scaling: { beta_fast: 32.0, beta_slow: 1.0, factor: 32.0, original_max_position_embeddings: 4096, rope_type: 'yarn', truncate: false },
  rope_theta: 150000,
  router_aux_loss_coef: 0.9,
  sliding_window: 128,
  swiglu_limit: 7.0,
  tie_word_embeddings: false,
  transformers_version: '4.55.0.dev0',
  use_cache: true,
  vocab_size: 201088,
};

const hasBlocks = (name: string) => name === 'model.layers.0.mlp.experts.gate_up_proj_blocks';

describe('gpt-oss config.json', () => {
  const { descriptor, config } = hfArchitecture(GPT_OSS_20B, { source: 'gpt-oss-20b', hasTensor: hasBlocks });
  const c = config as GptOssArchConfig;

  it('maps every field the model needs', () => {
    expect(descriptor.name).toBe('gpt-oss');
    expect(c).toMatchObject({
      hiddenSize: 2880,
      numLayers: 24,
      numHeads: 64,
      numKvHeads: 8,
      headDim: 64,
      vocabSize: 201088,
      rmsNormEps: 1e-5,
      ropeTheta: 150000,
      tieWordEmbeddings: false,
      attentionBias: true,
      slidingWindow: 128,
      numExperts: 32,
      numExpertsPerToken: 4,
      expertIntermediateSize: 2880,
      swigluLimit: 7,
      swigluAlpha: 1.702,
      expertStorage: 'mxfp4',
    });
    expect(c.layerTypes?.slice(0, 3)).toEqual(['sliding_attention', 'full_attention', 'sliding_attention']);
    expect(c.ropeScaling).toEqual({ beta_fast: 32, beta_slow: 1, factor: 32, original_max_position_embeddings: 4096, rope_type: 'yarn', truncate: false });
    expect(descriptor.contextLength(c)).toBe(131072);
  });

  it('lists the shipped MXFP4 experts and the router under the MoE names', () => {
    const specs = new Map(descriptor.weightSpecs(c, { kind: 'logits' }).map((s) => [s.name, s.shape]));
    expect(specs.get('model.layers.0.mlp.experts.gate_up_proj')).toEqual([32, 5760, 2880]);
    expect(specs.get('model.layers.0.mlp.experts.down_proj')).toEqual([32, 2880, 2880]);
    expect(specs.get('model.layers.23.self_attn.sinks')).toEqual([64]);
    expect(specs.get('model.layers.0.self_attn.o_proj.bias')).toEqual([2880]);
    expect(descriptor.hf.tensorName('model.layers.5.mlp.router.bias', c, { kind: 'logits' })).toBe('model.layers.5.mlp.gate.bias');
    expect(specs.get('model.layers.5.mlp.gate.bias')).toEqual([32]);
  });

  it('reads the rope settings transformers >= 4.56 nests in rope_parameters', () => {
    const { rope_scaling: scaling, rope_theta: _theta, ...rest } = GPT_OSS_20B;
    const nested = hfArchitecture({ ...rest, rope_parameters: { ...scaling, rope_theta: 250000 } }, { source: 'nested', hasTensor: hasBlocks }).config as GptOssArchConfig;
    expect(nested.ropeTheta).toBe(250000);
    expect(nested.ropeScaling).toEqual({ ...scaling });
  });

  it('reads openai\'s experts_per_token and defaults layer_types to sliding even layers', () => {
    const { num_experts_per_tok: _k, layer_types: _types, ...rest } = GPT_OSS_20B;
    const c2 = hfArchitecture(rest, { source: 'openai', hasTensor: hasBlocks }).config as GptOssArchConfig;
    expect(c2.numExpertsPerToken).toBe(4);
    expect(c2.layerTypes).toEqual(GPT_OSS_20B.layer_types);
  });

  it('refuses layer_types that do not fit the layers', () => {
    expect(() => hfArchitecture({ ...GPT_OSS_20B, layer_types: ['sliding_attention'] }, { source: 'bad', hasTensor: hasBlocks })).toThrow(
      'bad: config.json layer_types must list 24 of full_attention / sliding_attention',
    );
    expect(() => hfArchitecture({ ...GPT_OSS_20B, num_experts_per_tok: 33 }, { source: 'bad', hasTensor: hasBlocks })).toThrow('32 experts with 33 experts per token');
  });
});

describe('gpt-oss GGUF', () => {
  const small = gptOssConfig();

  it('names every canonical weight as llama.cpp does, and back', () => {
    for (const { name } of gptOssWeightSpecs(small, { kind: 'logits' })) expect(gptOssCanonicalName(gptOssGgufName(name))).toBe(name);
    expect(gptOssGgufName('model.layers.3.self_attn.sinks')).toBe('blk.3.attn_sinks.weight');
    expect(gptOssGgufName('model.layers.0.post_attention_layernorm.weight')).toBe('blk.0.post_attention_norm.weight');
    expect(gptOssGgufName('model.layers.0.mlp.gate.bias')).toBe('blk.0.ffn_gate_inp.bias');
    expect(gptOssGgufName('model.layers.1.mlp.experts.down_proj.bias')).toBe('blk.1.ffn_down_exps.bias');
    expect(() => gptOssCanonicalName('blk.0.ffn_norm.weight')).toThrow('GGUF tensor "blk.0.ffn_norm.weight" is not part of a gpt-oss model');
  });

  /** A header-only GGUF of gpt-oss-20b's keys (what llama.cpp's converter writes). */
  function ggufOf(extra: Record<string, unknown>): GgufFile {
    const a = 'gpt-oss';
    const metadata: Record<string, unknown> = {
      'general.architecture': a,
      [`${a}.context_length`]: 131072,
      [`${a}.embedding_length`]: 2880,
      [`${a}.feed_forward_length`]: 2880,
      [`${a}.block_count`]: 24,
      [`${a}.attention.head_count`]: 64,
      [`${a}.attention.head_count_kv`]: 8,
      [`${a}.attention.key_length`]: 64,
      [`${a}.attention.value_length`]: 64,
      [`${a}.rope.freq_base`]: 150000,
      [`${a}.attention.layer_norm_rms_epsilon`]: 1e-5,
      [`${a}.expert_count`]: 32,
      [`${a}.expert_used_count`]: 4,
      [`${a}.expert_feed_forward_length`]: 2880,
      [`${a}.attention.sliding_window`]: 128,
      [`${a}.rope.scaling.type`]: 'yarn',
      [`${a}.rope.scaling.factor`]: 32,
      [`${a}.rope.scaling.original_context_length`]: 4096,
      ...extra,
    };
    const tensor = (name: string, ggmlShape: number[]) => ({ name, ggmlShape, type: 0, offset: 0, byteLength: 0 });
    return { path: 'gpt-oss-20b.gguf', version: 3, metadata, typedMetadata: {} as GgufFile['typedMetadata'], tensors: [tensor('token_embd.weight', [2880, 201088]), tensor('output.weight', [2880, 201088]), tensor('blk.0.attn_q.bias', [4096])] };
  }

  it("reads llama.cpp's keys, with YaRN truncated as llama.cpp computes it and its default sliding pattern", () => {
    const c = gptOssGgufConfig(ggufOf({}), null);
    expect(c).toMatchObject({ architecture: 'gpt-oss', numExperts: 32, numExpertsPerToken: 4, expertIntermediateSize: 2880, slidingWindow: 128, tieWordEmbeddings: false, expertStorage: 'split' });
    expect(c.ropeScaling).toEqual({ rope_type: 'yarn', factor: 32, original_max_position_embeddings: 4096, beta_fast: 32, beta_slow: 1 });
    expect(c.layerTypes?.slice(0, 4)).toEqual(['sliding_attention', 'full_attention', 'sliding_attention', 'full_attention']);
    expect(gptOss.contextLength(c)).toBe(131072);
  });

  it('follows an explicit sliding_window_pattern (array or period)', () => {
    const pattern = Array.from({ length: 24 }, (_, l) => l < 2);
    expect(gptOssGgufConfig(ggufOf({ 'gpt-oss.attention.sliding_window_pattern': pattern }), null).layerTypes?.slice(0, 3)).toEqual(['sliding_attention', 'sliding_attention', 'full_attention']);
    expect(gptOssGgufConfig(ggufOf({ 'gpt-oss.attention.sliding_window_pattern': 3 }), null).layerTypes?.slice(0, 3)).toEqual(['sliding_attention', 'sliding_attention', 'full_attention']);
  });
});

function gptOssModel(): LoadedModel {
  const config = gptOssConfig();
  return {
    source: 'random',
    config,
    output: { kind: 'logits' },
    pooler: null,
    weights: randomGptOssWeights(config),
    onnxPath: null,
    tokenizer: null,
    chatTemplate: null,
    generationDefaults: {},
    eosTokenIds: [],
    contextLength: 64,
  };
}

it('the in-graph runner refuses gpt-oss at start-up, naming what it lacks', async () => {
  const model = gptOssModel();
  await expect(createRunner(model, { blockSize: 4, numBlocks: 8, device: 'cpu', attention: 'graph' })).rejects.toThrow(
    'gpt-oss runs only on the segmented runner (the native attention addon): the in-graph attention (--attention graph) has no attention sinks, sliding window or MoE block',
  );
});

// The native backends run the llama MLP / MoE, not gpt-oss's block: its segments must run in onnxruntime.
(nativeKernels() ? it : it.skip)('gpt-oss runs on onnx-segments, even with every linear Q8_0', () => {
  const choice = chooseDecoderBackend(quantizedQ8(gptOssModel()), { device: 'cpu' }, nativeKernels()!);
  expect(choice.name).toBe('onnx-segments');
});
