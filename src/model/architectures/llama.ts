// Llama 1-3, Mistral, TinyLlama (LlamaForCausalLM / MistralForCausalLM, and their *Model /
// *ForSequenceClassification classes when served for pooling).
import { decoderDescriptor } from './decoder-family';

export const llama = decoderDescriptor({
  name: 'llama',
  modelTypes: ['llama', 'mistral'],
  ggufArchitectures: ['llama'],
  attentionBias: (json) => json.attention_bias === true,
  slidingWindowApplies: () => true,
  ggufRopeRowsPermuted: true,
});
