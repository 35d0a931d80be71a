// Llama 1-3, Mistral, Ministral, TinyLlama (LlamaForCausalLM / MistralForCausalLM /
// MinistralForCausalLM, and their *Model / *ForSequenceClassification classes when served for
// pooling), the text side of LlavaForConditionalGeneration, and Mixtral (MixtralForCausalLM:
// llama layers with MoE MLPs; llama.cpp writes it as a `llama` GGUF with expert tensors).
import { decoderDescriptor } from './decoder-family';

export const llama = decoderDescriptor({
  name: 'llama',
  modelTypes: ['llama', 'mistral', 'ministral', 'mixtral'],
  ggufArchitectures: ['llama'],
  attentionBias: (json) => json.attention_bias === true,
  slidingWindowApplies: () => true,
  firstWindowedLayer: () => 0,
  ggufRopeRowsPermuted: true,
  normTopKProbDefault: true,
  // LlavaForConditionalGeneration (LLaVA-1.5) and LlavaNextForConditionalGeneration: a llama
  // under text_config, LlamaConfig's defaults.
  nestedText: {
    modelTypes: ['llava', 'llava_next'],
    defaults: {
      vocab_size: 32000, hidden_size: 4096, intermediate_size: 11008, num_hidden_layers: 32, num_attention_heads: 32,
      max_position_embeddings: 2048, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: false, attention_bias: false,
    },
  },
});
