// Llama 1-3, Mistral, TinyLlama (LlamaForCausalLM / MistralForCausalLM, and their *Model /
// *ForSequenceClassification classes when served for pooling), and Mixtral (MixtralForCausalLM:
// llama layers with MoE MLPs; llama.cpp writes it as a `llama` GGUF with expert tensors).
import { decoderDescriptor } from './decoder-family';

export const llama = decoderDescriptor({
  name: 'llama',
  modelTypes: ['llama', 'mistral', 'mixtral'],
  ggufArchitectures: ['llama'],
  attentionBias: (json) => json.attention_bias === true,
  slidingWindowApplies: () => true,
  ggufRopeRowsPermuted: true,
  normTopKProbDefault: true,
});
