// The architectures this server runs (one descriptor each; architecture.ts says how to add one)
// and the lookups the loaders, runners and writers use instead of branching on names.

import { computeDtypeOf, type ComputeDtype } from '../graph/compute-dtype';
import type { ModelArchConfig } from '../types';
import type { ArchitectureDescriptor, GraphKind, WeightSpec } from './architecture';
import { bert } from './bert';
import { llama } from './llama';
import { qwen2 } from './qwen2';
import { qwen3 } from './qwen3';
import { whisper } from './whisper';
import { xlmRoberta } from './xlm-roberta';

export const ARCHITECTURES: readonly ArchitectureDescriptor[] = [llama, qwen2, qwen3, bert, xlmRoberta, whisper];

/** The descriptor that produced `config`. */
export function architectureOf(config: ModelArchConfig): ArchitectureDescriptor {
  const descriptor = ARCHITECTURES.find((d) => d.name === config.architecture);
  if (!descriptor) throw new Error(`architecture '${config.architecture}' is not registered`);
  return descriptor;
}

/** What each graph kind serves, for startup errors. */
const GRAPH_KIND_USE: Record<GraphKind, string> = {
  causalLm: 'text generation',
  causalLmSegments: 'text generation',
  pooling: 'pooling (embeddings, classification, scoring)',
  poolingSegments: 'pooling (embeddings, classification, scoring)',
  encoderDecoder: 'transcription',
};

/** Where --dtype bfloat16 runs, for the startup errors that refuse it elsewhere. */
export const BFLOAT16_SCOPE =
  "bfloat16 runs only the linears of BERT-style encoders served for pooling (embed/classify/score), on a CPU with AVX512-BF16; start with --dtype auto (float32)";

/**
 * The compute type `config`'s `kind` graph is built in for --dtype `dtype`; throws the startup
 * error when the architecture does not build that graph in it (a half-precision request is never
 * quietly served in float32).
 */
export function graphDtypeFor(config: ModelArchConfig, kind: GraphKind, dtype: 'auto' | ComputeDtype | 'bfloat16' | undefined): ComputeDtype {
  if (dtype === 'bfloat16') throw new Error(`--dtype bfloat16: ${config.architecture} graphs for ${GRAPH_KIND_USE[kind]} have no bfloat16 kernels; ${BFLOAT16_SCOPE}`);
  const wanted = computeDtypeOf(dtype);
  const supported = architectureOf(config).graphDtypes?.[kind] ?? ['float32'];
  if (!supported.includes(wanted)) {
    throw new Error(
      `--dtype ${dtype}: ${config.architecture} graphs for ${GRAPH_KIND_USE[kind]} compute in ${supported.join(' or ')} only; ` +
        `start with --dtype auto (or ${supported.join(' / ')})`,
    );
  }
  return wanted;
}

/** The descriptor for a config.json `model_type`; throws naming the supported ones. */
export function architectureForHfModelType(modelType: unknown, source: string): ArchitectureDescriptor {
  const descriptor = typeof modelType === 'string' ? ARCHITECTURES.find((d) => d.hf.modelTypes.includes(modelType)) : undefined;
  if (!descriptor) {
    const supported = ARCHITECTURES.flatMap((d) => d.hf.modelTypes).join(', ');
    throw new Error(`${source}: model_type ${JSON.stringify(modelType)} is not supported (supported: ${supported})`);
  }
  return descriptor;
}

/** The descriptor for a GGUF `general.architecture`; throws naming the supported ones. */
export function architectureForGguf(arch: unknown, path: string): ArchitectureDescriptor {
  if (typeof arch !== 'string') throw new Error(`${path}: GGUF metadata has no general.architecture`);
  const descriptor = ARCHITECTURES.find((d) => d.gguf?.architectures.includes(arch));
  if (!descriptor) {
    const supported = ARCHITECTURES.flatMap((d) => d.gguf?.architectures ?? []).join(', ');
    throw new Error(`${path}: architecture "${arch}" is not supported (supported: ${supported})`);
  }
  return descriptor;
}

/** Throws naming the first weight that is missing or has the wrong shape. */
export function checkWeightShapes(specs: readonly WeightSpec[], shapeOf: (name: string) => number[] | undefined, source: string): void {
  for (const spec of specs) {
    const shape = shapeOf(spec.name);
    if (!shape) throw new Error(`${source}: missing weight ${spec.name}`);
    if (shape.join(',') !== spec.shape.join(',')) {
      throw new Error(`${source}: weight ${spec.name} has shape [${shape.join(',')}], the config implies [${spec.shape.join(',')}]`);
    }
  }
}
