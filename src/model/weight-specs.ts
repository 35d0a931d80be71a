// The weight list a model's config implies (HF names, shapes): the decoder-only list for
// llama/qwen2, Whisper's for an encoder-decoder config. Loaders check checkpoints against it.
import { decoderWeightSpecs, type WeightSpec } from './decoder-weights';
import type { ModelArchConfig } from './types';
import { whisperWeightSpecs } from './whisper/whisper-weights';

export function modelWeightSpecs(config: ModelArchConfig): WeightSpec[] {
  return config.encoder ? whisperWeightSpecs(config) : decoderWeightSpecs(config);
}

/** Throws naming the first weight that is missing or has the wrong shape. */
export function checkModelWeights(config: ModelArchConfig, shapeOf: (name: string) => number[] | undefined, source: string): void {
  for (const spec of modelWeightSpecs(config)) {
    const shape = shapeOf(spec.name);
    if (!shape) throw new Error(`${source}: missing weight ${spec.name}`);
    if (shape.join(',') !== spec.shape.join(',')) {
      throw new Error(`${source}: weight ${spec.name} has shape [${shape.join(',')}], the config implies [${spec.shape.join(',')}]`);
    }
  }
}
