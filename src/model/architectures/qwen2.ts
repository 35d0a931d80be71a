// Qwen2 / Qwen2.5 (Qwen2ForCausalLM; gte-Qwen2 style embedders when served for pooling), and the
// language model of Qwen2-VL / Qwen2.5-VL checkpoints (qwen-vl-text.ts), which is a Qwen2 decoder
// with M-RoPE.
import { decoderDescriptor } from './decoder-family';
import { QWEN_VL_MODEL_TYPES, qwenVlGgufMrope, qwenVlTextJson, qwenVlTextTensorName } from './qwen-vl-text';
import { qwenFirstWindowedLayer } from './qwen-window';

const qwen2Decoder = decoderDescriptor({
  name: 'qwen2',
  modelTypes: ['qwen2', ...QWEN_VL_MODEL_TYPES],
  ggufArchitectures: ['qwen2', 'qwen2vl'],
  attentionBias: () => true,
  slidingWindowApplies: (json) => json.use_sliding_window === true,
  firstWindowedLayer: qwenFirstWindowedLayer,
  ggufRopeRowsPermuted: false,
});

export const qwen2 = {
  ...qwen2Decoder,
  hf: {
    ...qwen2Decoder.hf,
    config: (json, ctx) => qwen2Decoder.hf.config(qwenVlTextJson(json), ctx),
    tensorName: (stored, config, output) => {
      const text = qwenVlTextTensorName(stored);
      return text === null ? null : qwen2Decoder.hf.tensorName(text, config, output);
    },
  },
  gguf: {
    ...qwen2Decoder.gguf!,
    config: (file, ropeFreqFactors) => ({ ...qwen2Decoder.gguf!.config(file, ropeFreqFactors), ...qwenVlGgufMrope(file) }),
    // A qwen2 GGUF has no key for the sections (llama.cpp's qwen2vl architecture has): refused, not dropped.
    metadata: (config) => {
      if (config.mropeSection) throw new Error("an M-RoPE (Qwen-VL) language model cannot be written as a qwen2 GGUF: llama.cpp's qwen2vl architecture holds its rope.dimension_sections");
      return qwen2Decoder.gguf!.metadata?.(config) ?? {};
    },
  },
} satisfies typeof qwen2Decoder;
