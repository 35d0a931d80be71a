// Gemma 2 (Gemma2ForCausalLM): attention logit soft-capping, final logit soft-capping, every other
// layer sliding (even layers local, odd global, as transformers and llama.cpp), one RoPE base.
import { gemmaDescriptor } from './gemma-family';

export const gemma2 = gemmaDescriptor({
  name: 'gemma2',
  modelTypes: ['gemma2'],
  ggufArchitecture: 'gemma2',
  qkNorm: false,
  // transformers' Gemma2Config defaults.
  hfDefaults: {
    vocab_size: 256000,
    hidden_size: 2304,
    intermediate_size: 9216,
    num_hidden_layers: 26,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    head_dim: 256,
    hidden_activation: 'gelu_pytorch_tanh',
    max_position_embeddings: 8192,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    query_pre_attn_scalar: 256,
    sliding_window: 4096,
    final_logit_softcapping: 30.0,
    attn_logit_softcapping: 50.0,
    tie_word_embeddings: true,
  },
  swaPattern: 2,
  localRopeScaled: true,
  ggufDefaultWindow: 4096,
  ggufSoftcaps: { attention: 50, final: 30 },
  ggufDefaultLocalTheta: null,
  ggufWideScaleLayers: 46,
});
