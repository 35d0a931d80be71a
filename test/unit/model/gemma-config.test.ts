// config.json and GGUF metadata of gemma2 / gemma3 as the released models ship them, mapped onto
// the decoder config: layer pattern, local/global RoPE, query scale, embedding scale (in the
// checkpoint's dtype), soft-caps, and llama.cpp's defaults where a GGUF leaves keys out.
import { gemma2 } from '../../../src/model/architectures/gemma2';
import { gemma3 } from '../../../src/model/architectures/gemma3';
import type { GgufFile } from '../../../src/model/gguf/gguf-file';
import { inGraphLacks } from '../../../src/model/graph/in-graph-limits';
import type { DecoderArchConfig } from '../../../src/model/types';

const ctx = { source: 'test', hasTensor: () => true };

/** google/gemma-3-1b-it's config.json. */
const GEMMA3_1B = {
  architectures: ['Gemma3ForCausalLM'],
  attention_bias: false,
  attn_logit_softcapping: null,
  bos_token_id: 2,
  eos_token_id: [1, 106],
  final_logit_softcapping: null,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  hidden_size: 1152,
  intermediate_size: 6912,
  max_position_embeddings: 32768,
  model_type: 'gemma3_text',
  num_attention_heads: 4,
  num_hidden_layers: 26,
  num_key_value_heads: 1,
  query_pre_attn_scalar: 256,
  rms_norm_eps: 1e-6,
  rope_local_base_freq: 10000,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: 512,
  sliding_window_pattern: 6,
  torch_dtype: 'bfloat16',
  vocab_size: 262144,
};

/** google/gemma-3-4b-it's config.json: text_config lists only what differs from Gemma3TextConfig's defaults. */
const GEMMA3_4B = {
  architectures: ['Gemma3ForConditionalGeneration'],
  model_type: 'gemma3',
  eos_token_id: [1, 106],
  text_config: {
    hidden_size: 2560,
    intermediate_size: 10240,
    model_type: 'gemma3_text',
    num_hidden_layers: 34,
    rope_scaling: { factor: 8.0, rope_type: 'linear' },
    sliding_window: 1024,
  },
  torch_dtype: 'bfloat16',
  vision_config: { model_type: 'siglip_vision_model', hidden_size: 1152 },
};

/** google/gemma-2-2b-it's config.json. */
const GEMMA2_2B = {
  architectures: ['Gemma2ForCausalLM'],
  attn_logit_softcapping: 50.0,
  final_logit_softcapping: 30.0,
  head_dim: 256,
  hidden_act: 'gelu_pytorch_tanh',
  hidden_activation: 'gelu_pytorch_tanh',
  hidden_size: 2304,
  intermediate_size: 9216,
  max_position_embeddings: 8192,
  model_type: 'gemma2',
  num_attention_heads: 8,
  num_hidden_layers: 26,
  num_key_value_heads: 4,
  query_pre_attn_scalar: 256,
  rms_norm_eps: 1e-6,
  rope_theta: 10000.0,
  sliding_window: 4096,
  torch_dtype: 'float32',
  vocab_size: 256000,
};

const globalLayers = (c: DecoderArchConfig) => c.layerTypes!.flatMap((t, i) => (t === 'full_attention' ? [i] : []));

describe('gemma3 config.json', () => {
  it('1B: every sixth layer global, local RoPE 10k on the sliding ones, bfloat16 embedding scale', () => {
    const c = gemma3.hf.config(GEMMA3_1B, ctx);
    expect(globalLayers(c)).toEqual([5, 11, 17, 23]);
    expect(c.slidingWindow).toBe(512);
    expect(c.layerRope![0]).toEqual({ ropeTheta: 10000, ropeScaling: null });
    expect(c.layerRope![5]).toBeNull();
    expect([c.ropeTheta, c.ropeScaling]).toEqual([1e6, null]);
    expect(c.attentionScale).toBe(1 / 16);
    // sqrt(1152) = 33.94 rounds to 34 in bfloat16, as transformers multiplies.
    expect(c.embeddingScale).toBe(34);
    expect([c.qkNorm, c.sandwichNorms, c.hiddenActivation, c.tieWordEmbeddings]).toEqual([true, true, 'gelu_tanh', true]);
    expect([c.attnLogitSoftcap, c.finalLogitSoftcap]).toEqual([undefined, undefined]);
    expect(gemma3.contextLength(c)).toBe(32768);
  });

  it("4B's text_config takes Gemma3TextConfig's defaults, linear scaling on global layers only, context not multiplied", () => {
    const c = gemma3.hf.config(GEMMA3_4B, ctx);
    expect([c.numHeads, c.numKvHeads, c.headDim, c.vocabSize, c.numLayers, c.hiddenSize]).toEqual([8, 4, 256, 262208, 34, 2560]);
    expect(c.ropeScaling).toEqual({ factor: 8, rope_type: 'linear' });
    expect(c.layerRope![0]).toEqual({ ropeTheta: 10000, ropeScaling: null });
    expect(globalLayers(c)).toEqual([5, 11, 17, 23, 29]);
    expect(gemma3.contextLength(c)).toBe(131072);
  });

  it('maps the text tower of a conditional-generation checkpoint and skips the vision tower', () => {
    const c = gemma3.hf.config(GEMMA3_4B, ctx);
    const name = (stored: string) => gemma3.hf.tensorName(stored, c, { kind: 'logits' });
    expect(name('language_model.model.layers.3.self_attn.q_norm.weight')).toBe('model.layers.3.self_attn.q_norm.weight');
    expect(name('model.language_model.embed_tokens.weight')).toBe('model.embed_tokens.weight');
    expect(name('vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight')).toBeNull();
    expect(name('model.multi_modal_projector.mm_input_projection_weight')).toBeNull();
    expect(name('language_model.lm_head.weight')).toBeNull();
  });

  it('adds 1 to every norm gain on load and leaves the other weights', () => {
    const c = gemma3.hf.config(GEMMA3_1B, ctx);
    const values = Float32Array.of(-0.5, 0, 0.25);
    gemma3.hf.adjustValues!('model.layers.0.self_attn.k_norm.weight', c)!(values);
    expect(Array.from(values)).toEqual([0.5, 1, 1.25]);
    expect(gemma3.hf.adjustValues!('model.layers.0.mlp.up_proj.weight', c)).toBeNull();
  });

  it('reads rope_parameters per layer type (transformers >= 4.56)', () => {
    const { rope_theta: _t, rope_local_base_freq: _l, rope_scaling: _s, ...rest } = GEMMA3_1B;
    const c = gemma3.hf.config(
      { ...rest, rope_parameters: { full_attention: { rope_type: 'linear', factor: 8, rope_theta: 1e6 }, sliding_attention: { rope_type: 'default', rope_theta: 1e4 } } },
      ctx,
    );
    expect([c.ropeTheta, c.ropeScaling]).toEqual([1e6, { rope_type: 'linear', factor: 8 }]);
    expect(c.layerRope![0]).toEqual({ ropeTheta: 1e4, ropeScaling: null });
  });

  it('refuses an activation other than gelu_pytorch_tanh and a layer_types list of the wrong length, naming them', () => {
    expect(() => gemma3.hf.config({ ...GEMMA3_1B, hidden_activation: 'silu' }, ctx)).toThrow(/hidden_activation "silu" is not supported/);
    expect(() => gemma3.hf.config({ ...GEMMA3_1B, layer_types: ['full_attention'] }, ctx)).toThrow(/layer_types/);
  });

  it('is refused by the in-graph decoder, naming what it lacks', () => {
    const lacks = inGraphLacks(gemma3.hf.config(GEMMA3_1B, ctx), 32768).join(', ');
    expect(lacks).toMatch(/sandwich norms/);
    expect(lacks).toMatch(/gelu_tanh MLP/);
    expect(lacks).toMatch(/embedding scale/);
  });
});

describe('gemma2 config.json', () => {
  it('2B: soft-caps 50 and 30, even layers sliding, one RoPE base, float32 embedding scale', () => {
    const c = gemma2.hf.config(GEMMA2_2B, ctx);
    expect([c.attnLogitSoftcap, c.finalLogitSoftcap]).toEqual([50, 30]);
    expect(globalLayers(c)).toEqual(Array.from({ length: 13 }, (_, i) => 2 * i + 1));
    expect(c.layerRope).toBeUndefined();
    expect(c.embeddingScale).toBe(48);
    expect(c.qkNorm).toBeUndefined();
  });

  it('an explicit null soft-cap turns it off', () => {
    expect(gemma2.hf.config({ ...GEMMA2_2B, attn_logit_softcapping: null }, ctx).attnLogitSoftcap).toBeUndefined();
  });
});

/** A GGUF header of `arch` with `metadata` (prefixed) and a token embedding of the config's shape. */
function ggufFile(arch: string, metadata: Record<string, unknown>, layers: number): GgufFile {
  const meta: Record<string, unknown> = {
    'general.architecture': arch,
    [`${arch}.embedding_length`]: 64,
    [`${arch}.feed_forward_length`]: 128,
    [`${arch}.block_count`]: layers,
    [`${arch}.attention.head_count`]: 4,
    [`${arch}.attention.head_count_kv`]: 2,
    [`${arch}.attention.key_length`]: 32,
    [`${arch}.attention.layer_norm_rms_epsilon`]: 1e-6,
    [`${arch}.context_length`]: 8192,
  };
  for (const [key, value] of Object.entries(metadata)) meta[`${arch}.${key}`] = value;
  return { path: 'test.gguf', version: 3, metadata: meta, typedMetadata: {} as GgufFile['typedMetadata'], tensors: [{ name: 'token_embd.weight', ggmlShape: [64, 512], type: 0, offset: 0, byteLength: 0 }] };
}

describe('gemma GGUF metadata, read as llama.cpp does', () => {
  it('gemma2 without window or soft-cap keys: llama.cpp defaults 4096, 50 and 30', () => {
    const c = gemma2.gguf!.config(ggufFile('gemma2', {}, 4), null);
    expect([c.slidingWindow, c.attnLogitSoftcap, c.finalLogitSoftcap]).toEqual([4096, 50, 30]);
    expect(c.layerTypes).toEqual(['sliding_attention', 'full_attention', 'sliding_attention', 'full_attention']);
    expect(c.attentionScale).toBe(1 / Math.sqrt(32));
  });

  it('gemma3: a numeric pattern, freq_base_swa, linear scaling on global layers, and no window without the key', () => {
    const c = gemma3.gguf!.config(
      ggufFile('gemma3', { 'attention.sliding_window': 512, 'attention.sliding_window_pattern': 3, 'rope.freq_base': 1e6, 'rope.freq_base_swa': 1e4, 'rope.scaling.type': 'linear', 'rope.scaling.factor': 8 }, 6),
      null,
    );
    expect(globalLayers(c)).toEqual([2, 5]);
    expect(c.layerRope![0]).toEqual({ ropeTheta: 1e4, ropeScaling: null });
    expect(c.ropeScaling).toEqual({ rope_type: 'linear', factor: 8 });
    expect(c.finalLogitSoftcap).toBeUndefined();
    const plain = gemma3.gguf!.config(ggufFile('gemma3', {}, 6), null);
    expect([plain.slidingWindow, plain.layerRope, plain.attnLogitSoftcap]).toEqual([undefined, undefined, undefined]);
  });

  it("the 27B shapes (gemma3 62 layers, gemma2 46) scale queries by hidden/heads, as llama.cpp", () => {
    expect(gemma3.gguf!.config(ggufFile('gemma3', {}, 62), null).attentionScale).toBe(1 / Math.sqrt(16));
    expect(gemma2.gguf!.config(ggufFile('gemma2', {}, 46), null).attentionScale).toBe(1 / Math.sqrt(16));
  });

  it('the writer refuses what llama.cpp cannot read back', () => {
    const c3 = gemma3.hf.config({ ...GEMMA3_1B, query_pre_attn_scalar: 128 }, ctx);
    expect(() => gemma3.gguf!.metadata!(c3)).toThrow(/cannot hold the query scale/);
    const c2 = gemma2.hf.config({ ...GEMMA2_2B, final_logit_softcapping: null }, ctx);
    expect(() => gemma2.gguf!.metadata!(c2)).toThrow(/without final_logit_softcapping/);
  });
});
