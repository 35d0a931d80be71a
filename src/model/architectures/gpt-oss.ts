// gpt-oss (GptOssForCausalLM: gpt-oss-20b / -120b; GGUF arch `gpt-oss`). Config and weights are
// read in src/model/gpt-oss/; the layers run segmented (graph/decoder-segments.ts with the MoE
// block of graph/gpt-oss-moe.ts), with each layer's sinks and window passed to the native attention.
import { derivedContextLength } from './decoder-family';
import { decoderSegments } from '../graph/decoder-segments';
import { gptOssMoe } from '../graph/gpt-oss-moe';
import { requireWeight, toF32 } from '../graph/weights';
import { gptOssGgufConfig, gptOssHfConfig, type GptOssArchConfig } from '../gpt-oss/gpt-oss-config';
import { gptOssCanonicalName, gptOssGgufName, gptOssHfName, gptOssWeightSpecs, unfuseGptOssExperts } from '../gpt-oss/gpt-oss-weights';
import type { ArchitectureDescriptor } from './architecture';

export const gptOss: ArchitectureDescriptor<GptOssArchConfig> = {
  name: 'gpt-oss',
  defaultPooling: 'LAST',
  sentencePairs: false,
  hf: {
    modelTypes: ['gpt_oss'],
    config: gptOssHfConfig,
    tensorName: (stored, config) => (stored === 'lm_head.weight' && config.tieWordEmbeddings ? null : gptOssHfName(stored)),
  },
  gguf: {
    architectures: ['gpt-oss'],
    config: gptOssGgufConfig,
    tensorName: gptOssCanonicalName,
    ggufName: gptOssGgufName,
    // llama.cpp keeps gpt-oss's Q/K rows in HF order (NEOX RoPE).
    ropePermutedHeads: () => null,
  },
  weightSpecs: gptOssWeightSpecs,
  unfuseWeights: unfuseGptOssExperts,
  contextLength: derivedContextLength,
  graphs: {
    causalLm: () => {
      throw new Error(
        'gpt-oss runs only on the segmented runner (the native attention addon): the in-graph attention (--attention graph) has no attention sinks, sliding window or MoE block',
      );
    },
    causalLmSegments: (config, weights, opts) => {
      const segments = decoderSegments(config, weights, opts, gptOssMoe);
      // Each layer's learned sink logits join its attention options (window and scale from the config).
      const layers = segments.layers.map((layer, l) => ({ ...layer, attention: { ...layer.attention, sinks: toF32(requireWeight(weights, `model.layers.${l}.self_attn.sinks`)) } }));
      return { ...segments, layers };
    },
  },
  graphDtypes: { causalLmSegments: ['float32'] },
};
