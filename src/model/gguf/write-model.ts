// Writes a whole llama/qwen2 model (canonical HF weights) as a GGUF file llama.cpp can load:
// metadata from the config, GGUF tensor names and Q/K row order from the architecture descriptor.
import type { GgufMapping } from '../architectures/architecture';
import { architectureOf } from '../architectures/registry';
import type { DecoderArchConfig, ModelArchConfig } from '../types';
import type { GgufFile } from './gguf-file';
import { reorderRopeRows } from './rope-permute';
import { gv, writeGguf, type GgufTensorToWrite, type GgufTypedValue, type GgufWriteType } from './writer';

export interface HfTensorSource {
  /** Canonical HF name. */
  name: string;
  /** HF shape, [out, in]. */
  shape: number[];
  values: () => Float32Array;
}

/** llama.cpp's general.file_type (LLAMA_FTYPE_ALL_F32 / MOSTLY_F16 / MOSTLY_Q8_0 / MOSTLY_BF16 / MOSTLY_MXFP4_MOE). */
const FILE_TYPES: Record<GgufWriteType, number> = { f32: 0, f16: 1, q8_0: 7, bf16: 32, mxfp4: 38 };

export function archMetadata(config: DecoderArchConfig, name: string, matrixType: GgufWriteType): Record<string, GgufTypedValue> {
  const a = config.architecture;
  return {
    'general.architecture': gv.str(a),
    'general.name': gv.str(name),
    'general.file_type': gv.u32(FILE_TYPES[matrixType]),
    [`${a}.context_length`]: gv.u32(config.maxPositionEmbeddings),
    [`${a}.embedding_length`]: gv.u32(config.hiddenSize),
    [`${a}.feed_forward_length`]: gv.u32(config.intermediateSize),
    [`${a}.block_count`]: gv.u32(config.numLayers),
    [`${a}.attention.head_count`]: gv.u32(config.numHeads),
    [`${a}.attention.head_count_kv`]: gv.u32(config.numKvHeads),
    [`${a}.attention.key_length`]: gv.u32(config.headDim),
    [`${a}.attention.value_length`]: gv.u32(config.headDim),
    [`${a}.rope.dimension_count`]: gv.u32(config.rotaryDim ?? config.headDim),
    [`${a}.rope.freq_base`]: gv.f32(config.ropeTheta),
    [`${a}.attention.layer_norm_rms_epsilon`]: gv.f32(config.rmsNormEps),
    ...(config.numExperts
      ? {
          [`${a}.expert_count`]: gv.u32(config.numExperts),
          [`${a}.expert_used_count`]: gv.u32(config.numExpertsPerToken!),
          [`${a}.expert_feed_forward_length`]: gv.u32(config.expertIntermediateSize!),
          [`${a}.expert_weights_norm`]: gv.bool(config.normTopKProb ?? false),
        }
      : {}),
  };
}

/**
 * `tokenizerMetadata`: the tokenizer.* keys (e.g. copied from another GGUF's typedMetadata);
 * llama.cpp needs tokenizer.ggml.tokens to have config.vocabSize entries.
 * Matrices are written as `matrixType` (Q8_0 and MXFP4 fall back to F16 for rows that are not
 * whole 32-value blocks); 1-D tensors (norms, biases) always as F32.
 */
export function writeModelGguf(
  path: string,
  config: DecoderArchConfig,
  tensors: HfTensorSource[],
  tokenizerMetadata: Record<string, GgufTypedValue>,
  matrixType: GgufWriteType,
  name = 'ortllm-model',
): void {
  const mapping = architectureOf(config).gguf;
  if (!mapping) throw new Error(`${config.architecture} models have no GGUF form`);
  const toWrite = tensors.map((t): GgufTensorToWrite => ({
    name: mapping.ggufName(t.name),
    shape: t.shape,
    type: tensorType(t.name, t.shape, matrixType),
    data: () => toGgufRowOrder(t, config, mapping),
  }));
  writeGguf(path, { ...archMetadata(config, name, matrixType), ...mapping.metadata?.(config), ...tokenizerMetadata }, toWrite);
}

/** MoE routers (ffn_gate_inp), which llama-quantize leaves in F32: a quantized router would pick other experts. */
const ROUTER = /\.mlp\.gate\.weight$/;

/** 1-D tensors and routers stay F32; Q8_0 / MXFP4 rows that are not whole blocks fall back to F16, as llama-quantize does. */
function tensorType(name: string, shape: number[], matrixType: GgufWriteType): GgufWriteType {
  if (shape.length === 1 || ROUTER.test(name)) return 'f32';
  if ((matrixType === 'q8_0' || matrixType === 'mxfp4') && shape[shape.length - 1] % 32 !== 0) return 'f16';
  return matrixType;
}

function toGgufRowOrder(tensor: HfTensorSource, config: ModelArchConfig, mapping: GgufMapping<ModelArchConfig>): Float32Array {
  const heads = mapping.ropePermutedHeads(tensor.name, config);
  if (heads === null) return tensor.values();
  const values = tensor.values().slice(); // the source may be someone's live weights: permute a copy
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  reorderRopeRows(bytes, heads, config.headDim, bytes.byteLength / tensor.shape[0], 'to-gguf');
  return values;
}

/** The tokenizer.* keys of a GGUF file, typed, ready to copy into another file. */
export function ggufTokenizerMetadata(file: GgufFile): Record<string, GgufTypedValue> {
  const out: Record<string, GgufTypedValue> = {};
  for (const [key, entry] of Object.entries(file.typedMetadata)) {
    if (key.startsWith('tokenizer.')) out[key] = entry as GgufTypedValue;
  }
  return out;
}
