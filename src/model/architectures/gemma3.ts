// Gemma 3 text (Gemma3ForCausalLM, model_type gemma3_text; and the text tower of
// Gemma3ForConditionalGeneration, model_type gemma3 with text_config): q/k norms, five sliding
// layers to one global, local RoPE base rope_local_base_freq unscaled, global rope_theta with
// rope_scaling, final soft-cap only when the config sets one.
import { gemmaDescriptor } from './gemma-family';

export const gemma3 = gemmaDescriptor({
  name: 'gemma3',
  modelTypes: ['gemma3_text', 'gemma3'],
  ggufArchitecture: 'gemma3',
  qkNorm: true,
  // transformers' Gemma3TextConfig defaults (gemma-3-4b-it's text_config lists only what differs).
  hfDefaults: {
    vocab_size: 262208,
    hidden_size: 2304,
    intermediate_size: 9216,
    num_hidden_layers: 26,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    head_dim: 256,
    hidden_activation: 'gelu_pytorch_tanh',
    max_position_embeddings: 131072,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    rope_local_base_freq: 10000,
    query_pre_attn_scalar: 256,
    sliding_window: 4096,
    sliding_window_pattern: 6,
    final_logit_softcapping: null,
    attn_logit_softcapping: null,
    tie_word_embeddings: true,
  },
  swaPattern: 6,
  localRopeScaled: false,
  ggufDefaultWindow: 0,
  ggufSoftcaps: { attention: null, final: 0 },
  ggufDefaultLocalTheta: 10000,
  ggufWideScaleLayers: 62,
});
