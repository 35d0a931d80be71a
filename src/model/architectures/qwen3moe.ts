// Qwen3-MoE (Qwen3MoeForCausalLM; llama.cpp's `qwen3moe` GGUF): qwen3's attention (per-head
// RMSNorm of q and k before RoPE, no q/k/v biases, its own head_dim) with MoE MLPs (num_experts,
// num_experts_per_tok, moe_intermediate_size, norm_topk_prob; dense layers where
// decoder_sparse_step / mlp_only_layers say: moe/moe-config.ts). Q/K rows are not permuted in its
// GGUF files.
import { decoderDescriptor } from './decoder-family';
import { qwenFirstWindowedLayer } from './qwen-window';

export const qwen3moe = decoderDescriptor({
  name: 'qwen3moe',
  modelTypes: ['qwen3_moe'],
  ggufArchitectures: ['qwen3moe'],
  attentionBias: (json) => json.attention_bias === true,
  slidingWindowApplies: (json) => json.use_sliding_window === true,
  firstWindowedLayer: qwenFirstWindowedLayer,
  qkNorm: true,
  ggufRopeRowsPermuted: false,
  // Qwen3MoeConfig's default.
  normTopKProbDefault: false,
});
