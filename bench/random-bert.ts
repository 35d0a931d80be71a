// A MiniLM-shaped BERT with seeded random weights (all-MiniLM-L6-v2's shape: 6 layers, hidden 384,
// 12 heads, intermediate 1536, vocab 30522), written once to .bench-cache/ as a real Hugging Face
// sentence-transformers directory (safetensors, WordPiece tokenizer.json, MEAN pooling +
// Normalize) that ortllm serves, plus onnx/model.onnx of the same weights for transformers.js.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bert } from '../src/model/architectures/bert';
import { randomWeights } from '../src/model/dummy/random-weights';
import { writeSafetensors } from '../src/model/hf/safetensors-writer';
import type { EncoderArchConfig } from '../src/model/types';
import { writeBertOnnxExport } from './bert-onnx-export';

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];

export const MINILM_CONFIG: EncoderArchConfig = {
  architecture: 'bert',
  hiddenSize: 384,
  intermediateSize: 1536,
  numLayers: 6,
  numHeads: 12,
  numKvHeads: 12,
  headDim: 32,
  vocabSize: 30522,
  maxPositionEmbeddings: 512,
  layerNormEps: 1e-12,
  hiddenAct: 'gelu',
  typeVocabSize: 2,
  positionOffset: 0,
};

/** A vocabulary word; each is one token, so a text of n words is n + 2 tokens with [CLS] and [SEP]. */
export function benchWord(i: number): string {
  return `w${i % (MINILM_CONFIG.vocabSize - SPECIALS.length)}`;
}

/** The directory (written on first use, version-stamped so a changed layout is rewritten). */
export function ensureBenchBert(cacheDir: string): string {
  const dir = join(cacheDir, 'minilm-random-v1');
  if (existsSync(join(dir, 'onnx', 'model.onnx'))) return dir;
  console.log(`Writing a random MiniLM-shaped BERT to ${dir} ...`);
  mkdirSync(dir, { recursive: true });
  const c = MINILM_CONFIG;
  const tensors = randomWeights(bert.weightSpecs(c, { kind: 'pooled', pooling: 'MEAN' }), 7).map((t) => ({ name: t.name, shape: t.shape, data: t.values() }));
  writeSafetensors(join(dir, 'model.safetensors'), tensors.map((t) => ({ name: t.name, tensor: { kind: 'f32', shape: t.shape, data: t.data } })), 'F32');
  const byName = new Map(tensors.map((t) => [t.name, t.data]));
  writeBertOnnxExport(join(dir, 'onnx', 'model.onnx'), c, (name) => byName.get(name)!);
  const json = (file: string, value: unknown) => writeFileSync(join(dir, file), JSON.stringify(value, null, 2));
  json('config.json', {
    architectures: ['BertModel'],
    model_type: 'bert',
    vocab_size: c.vocabSize,
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    intermediate_size: c.intermediateSize,
    hidden_act: 'gelu',
    max_position_embeddings: c.maxPositionEmbeddings,
    type_vocab_size: c.typeVocabSize,
    layer_norm_eps: c.layerNormEps,
    pad_token_id: 0,
  });
  json('tokenizer.json', wordPieceTokenizer());
  json('tokenizer_config.json', { tokenizer_class: 'BertTokenizer', do_lower_case: true, cls_token: '[CLS]', sep_token: '[SEP]', pad_token: '[PAD]', unk_token: '[UNK]', mask_token: '[MASK]', model_max_length: 512 });
  json('modules.json', [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
  ]);
  mkdirSync(join(dir, '1_Pooling'), { recursive: true });
  json('1_Pooling/config.json', { word_embedding_dimension: c.hiddenSize, pooling_mode_cls_token: false, pooling_mode_mean_tokens: true, pooling_mode_max_tokens: false, pooling_mode_lasttoken: false });
  json('sentence_bert_config.json', { max_seq_length: 256, do_lower_case: false });
  return dir;
}

function wordPieceTokenizer(): object {
  const vocab: Record<string, number> = {};
  SPECIALS.forEach((t, i) => (vocab[t] = i));
  for (let i = 0; i < MINILM_CONFIG.vocabSize - SPECIALS.length; i++) vocab[benchWord(i)] = SPECIALS.length + i;
  const special = (content: string) => ({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const token = (id: string) => ({ SpecialToken: { id, type_id: 0 } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIALS.map(special),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [token('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, token('[SEP]')],
      pair: [token('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, token('[SEP]'), { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}
