// Whisper (WhisperForConditionalGeneration): an encoder-decoder speech model. config.json plus
// preprocessor_config.json map onto WhisperArchConfig; the tensors keep transformers' names; the
// graphs are an encoder (ending in every decoder layer's cross-attention K/V) and a decoder over
// the paged KV cache (runner/whisper-runner.ts).

import { join } from 'node:path';
import { audioFeatureConfigFromJson } from '../audio/feature-config';
import { buildWhisperDecoderGraph } from '../graph/whisper-decoder-graph';
import { buildWhisperEncoderGraph } from '../graph/whisper-encoder-graph';
import { readJsonFile } from '../hf/hf-tokenizer-files';
import type { WhisperArchConfig } from '../types';
import { whisperArchConfig } from '../whisper/whisper-config';
import { whisperWeightSpecs } from '../whisper/whisper-weights';
import type { ArchitectureDescriptor } from './architecture';

export const whisper: ArchitectureDescriptor<WhisperArchConfig> = {
  name: 'whisper',
  defaultPooling: 'LAST',
  sentencePairs: false,
  hf: {
    modelTypes: ['whisper'],
    config(json, ctx) {
      // ctx.source is the model directory: the feature extractor's settings sit beside config.json.
      const features = audioFeatureConfigFromJson(readJsonFile(join(ctx.source, 'preprocessor_config.json')), Number(json.num_mel_bins ?? 80), ctx.source);
      return whisperArchConfig(json, features, ctx.source);
    },
    // A tied checkpoint may still store proj_out; the graph uses the embedding.
    tensorName: (stored, config) => (stored === 'proj_out.weight' && config.tieWordEmbeddings ? null : stored),
  },
  weightSpecs: (config) => whisperWeightSpecs(config),
  contextLength: (config) => config.maxPositionEmbeddings,
  graphs: {
    encoderDecoder: (config, weights, opts) => ({
      encoder: buildWhisperEncoderGraph(config, weights, opts),
      decoder: buildWhisperDecoderGraph(config, weights, opts),
    }),
  },
};
