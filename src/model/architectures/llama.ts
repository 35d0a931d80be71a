// Llama 1-3, Mistral, Ministral, TinyLlama (LlamaForCausalLM / MistralForCausalLM /
// MinistralForCausalLM, and their *Model / *ForSequenceClassification classes when served for pooling).
import { decoderDescriptor } from './decoder-family';

export const llama = decoderDescriptor({
  name: 'llama',
  modelTypes: ['llama', 'mistral', 'ministral'],
  ggufArchitectures: ['llama'],
  attentionBias: (json) => json.attention_bias === true,
  slidingWindowApplies: () => true,
  firstWindowedLayer: () => 0,
  ggufRopeRowsPermuted: true,
});
