// Qwen2 / Qwen2.5 (Qwen2ForCausalLM; gte-Qwen2 style embedders when served for pooling).
import { decoderDescriptor } from './decoder-family';
import { qwenFirstWindowedLayer } from './qwen-window';

export const qwen2 = decoderDescriptor({
  name: 'qwen2',
  modelTypes: ['qwen2'],
  ggufArchitectures: ['qwen2'],
  attentionBias: () => true,
  slidingWindowApplies: (json) => json.use_sliding_window === true,
  firstWindowedLayer: qwenFirstWindowedLayer,
  ggufRopeRowsPermuted: false,
});
