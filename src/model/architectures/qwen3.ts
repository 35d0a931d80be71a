// Qwen3 dense (Qwen3ForCausalLM; Qwen3 embedders when served for pooling): the Qwen2 layout
// without QKV biases (unless attention_bias), with a per-head RMSNorm on q and k before RoPE
// (self_attn.q_norm / k_norm; GGUF attn_q_norm / attn_k_norm) and head_dim from config.json.
import { decoderDescriptor } from './decoder-family';
import { qwenFirstWindowedLayer } from './qwen-window';

export const qwen3 = decoderDescriptor({
  name: 'qwen3',
  modelTypes: ['qwen3'],
  ggufArchitectures: ['qwen3'],
  attentionBias: (json) => json.attention_bias === true,
  slidingWindowApplies: (json) => json.use_sliding_window === true,
  firstWindowedLayer: qwenFirstWindowedLayer,
  qkNorm: true,
  ggufRopeRowsPermuted: false,
});
