// Writes a GGUF model (by default stories260K) as a Hugging Face directory: config.json,
// model.safetensors (or shards + index) in HF layout (llama Q/K rows un-permuted by the GGUF loader),
// tokenizer.json / tokenizer_config.json converted from the GGUF vocabulary.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadGgufModel } from '../../src/model/gguf/load-gguf';
import { writeSafetensors, type SafetensorsDtype } from '../../src/model/hf/safetensors-writer';
import { ggufVocabToTokenizerJson } from '../../src/model/tokenizer';
import type { DecoderArchConfig, WeightTensor } from '../../src/model/types';

export { encode, writeSafetensors, type SafetensorsDtype } from '../../src/model/hf/safetensors-writer';

export interface WriteHfDirOptions {
  dtype?: SafetensorsDtype;
  /** Split the weights over this many model-0000N-of-0000M.safetensors files with an index. */
  shards?: number;
}

export async function writeHfDirFromGguf(ggufPath: string, dir: string, opts: WriteHfDirOptions = {}): Promise<void> {
  const { file, config, weights } = await loadGgufModel(ggufPath, { loadWeights: true });
  mkdirSync(dir, { recursive: true });
  const metadata = file.metadata;
  const tensors = weights!.names().map((name) => ({ name, tensor: weights!.get(name) }));
  writeJson(join(dir, 'config.json'), hfConfigJson(config as DecoderArchConfig, metadata));
  writeSafetensorsShards(dir, tensors, opts.dtype ?? 'F32', opts.shards ?? 1);
  const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(metadata);
  writeJson(join(dir, 'tokenizer.json'), tokenizerJson);
  writeJson(join(dir, 'tokenizer_config.json'), tokenizerConfig);
}

function hfConfigJson(config: DecoderArchConfig, metadata: Record<string, unknown>): object {
  return {
    architectures: [config.architecture === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
    model_type: config.architecture,
    hidden_size: config.hiddenSize,
    intermediate_size: config.intermediateSize,
    num_hidden_layers: config.numLayers,
    num_attention_heads: config.numHeads,
    num_key_value_heads: config.numKvHeads,
    head_dim: config.headDim,
    vocab_size: config.vocabSize,
    rms_norm_eps: config.rmsNormEps,
    rope_theta: config.ropeTheta,
    max_position_embeddings: config.maxPositionEmbeddings,
    tie_word_embeddings: config.tieWordEmbeddings,
    bos_token_id: metadata['tokenizer.ggml.bos_token_id'],
    eos_token_id: metadata['tokenizer.ggml.eos_token_id'],
    torch_dtype: 'float32',
  };
}

function writeSafetensorsShards(
  dir: string,
  tensors: Array<{ name: string; tensor: WeightTensor }>,
  dtype: SafetensorsDtype,
  shards: number,
): void {
  if (shards === 1) {
    writeSafetensors(join(dir, 'model.safetensors'), tensors, dtype);
    return;
  }
  const weightMap: Record<string, string> = {};
  for (let s = 0; s < shards; s++) {
    const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = tensors.filter((_, i) => i % shards === s);
    for (const { name } of part) weightMap[name] = file;
    writeSafetensors(join(dir, file), part, dtype);
  }
  writeJson(join(dir, 'model.safetensors.index.json'), { metadata: {}, weight_map: weightMap });
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 2));
}
