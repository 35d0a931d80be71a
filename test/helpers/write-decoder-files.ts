// Seeded random decoders written as real checkpoints ship: a Hugging Face directory (config.json
// with the family's own keys, model.safetensors, tokenizer.json with a simple chat template) and
// a GGUF converted from that directory's loaded weights (the project's writer, llama.cpp's
// names and metadata). The vocabulary is stories260K's (512 SentencePiece pieces).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lazyRandomTensors } from '../../bench/random-llama';
import { readGgufFile } from '../../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata, writeModelGguf } from '../../src/model/gguf/write-model';
import { gv, type GgufWriteType } from '../../src/model/gguf/writer';
import { writeSafetensors } from '../../src/model/hf/safetensors-writer';
import { ggufVocabToTokenizerJson } from '../../src/model/tokenizer';
import type { DecoderArchConfig, LoadedModel } from '../../src/model/types';
import { sharedModel } from './model-files';

export const STORIES = sharedModel('stories260K.gguf');

/** A template simple enough for any vocabulary: each message's role and content, then the assistant's turn. */
export const SIMPLE_CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";

/** HF config.json class and type per architecture. */
const HF_CLASSES: Record<string, { architectures: string[]; model_type: string }> = {
  llama: { architectures: ['MistralForCausalLM'], model_type: 'mistral' },
  qwen2: { architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2' },
  qwen3: { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3' },
};

/** config.json for `c` with the keys its family's checkpoints carry (`extra` overrides or adds). */
export function hfConfigJson(c: DecoderArchConfig, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...HF_CLASSES[c.architecture],
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    vocab_size: c.vocabSize,
    rms_norm_eps: c.rmsNormEps,
    rope_theta: c.ropeTheta,
    rope_scaling: null,
    max_position_embeddings: c.maxPositionEmbeddings,
    tie_word_embeddings: c.tieWordEmbeddings,
    attention_bias: c.attentionBias,
    hidden_act: 'silu',
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: 'float32',
    ...extra,
  };
}

/** Writes `config`'s seeded weights as an HF directory with config.json `json` and stories260K's tokenizer. */
export async function writeDecoderHfDir(dir: string, config: DecoderArchConfig, json: Record<string, unknown>, seed: number): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(json, null, 2));
  const tensors = lazyRandomTensors(config, seed).map(({ name, shape, values }) => ({ name, tensor: { kind: 'f32' as const, shape, data: values() } }));
  writeSafetensors(join(dir, 'model.safetensors'), tensors, 'F32');
  const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson((await readGgufFile(STORIES)).metadata);
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...tokenizerConfig, chat_template: SIMPLE_CHAT_TEMPLATE }));
}

/** Converts a loaded HF model to GGUF (matrices as `matrixType`), with stories260K's vocabulary and the simple chat template. */
export async function convertToGguf(model: LoadedModel, path: string, matrixType: GgufWriteType = 'f32'): Promise<void> {
  const weights = model.weights!;
  const tensors = weights.names().map((name) => {
    const t = weights.get(name);
    if (t.kind !== 'f32') throw new Error(`${name}: only float32 weights convert`);
    return { name, shape: t.shape, values: () => t.data };
  });
  const tokenizer = ggufTokenizerMetadata(await readGgufFile(STORIES));
  writeModelGguf(path, model.config as DecoderArchConfig, tensors, { ...tokenizer, 'tokenizer.chat_template': gv.str(SIMPLE_CHAT_TEMPLATE) }, matrixType);
}
