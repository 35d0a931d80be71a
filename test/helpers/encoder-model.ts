// Random BERT / XLM-RoBERTa checkpoints written as real Hugging Face directories (config.json,
// model.safetensors with the real tensor names, tokenizer.json, optional sentence-transformers
// files), and an independent plain-TypeScript reference forward over the same stored tensors.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bertTokenizerFiles, xlmrTokenizerFiles } from './test-tokenizers';
import { writeSafetensors } from './write-hf-dir';

export type EncoderFamily = 'bert' | 'xlm-roberta';

export interface TestEncoder {
  family: EncoderFamily;
  hidden: number;
  layers: number;
  heads: number;
  intermediate: number;
  maxPositions: number;
  /** null: a *Model embedder; n: a *ForSequenceClassification with n labels. */
  numLabels: number | null;
  hiddenAct?: 'gelu' | 'gelu_new' | 'relu';
  layerNormEps?: number;
}

export interface WrittenEncoder {
  dir: string;
  /** Stored tensors by their checkpoint name (with the class prefix). */
  tensors: Map<string, Float32Array>;
  spec: TestEncoder;
  vocabSize: number;
}

export interface SentenceTransformersFiles {
  pooling: 'cls' | 'mean' | 'lasttoken';
  normalize: boolean;
  maxSeqLength?: number;
}

const FAMILY = {
  bert: { modelType: 'bert', model: 'BertModel', classifier: 'BertForSequenceClassification', prefix: 'bert.', padId: 0, typeVocab: 2, tokenizer: bertTokenizerFiles },
  'xlm-roberta': { modelType: 'xlm-roberta', model: 'XLMRobertaModel', classifier: 'XLMRobertaForSequenceClassification', prefix: 'roberta.', padId: 1, typeVocab: 1, tokenizer: xlmrTokenizerFiles },
} as const;

export function writeEncoderDir(dir: string, spec: TestEncoder, seed: number, st?: SentenceTransformersFiles): WrittenEncoder {
  const family = FAMILY[spec.family];
  const tok = family.tokenizer();
  const h = spec.hidden;
  const classifier = spec.numLabels !== null;
  const prefix = classifier ? family.prefix : '';
  const rng = xorshift(seed);
  const tensors = new Map<string, Float32Array>();
  const shapes = new Map<string, number[]>();
  const add = (name: string, shape: number[], kind: 'matrix' | 'gain' | 'bias' = 'matrix') => {
    const values = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => {
      const u = rng() * 2 - 1;
      return kind === 'gain' ? 1 + 0.2 * u : kind === 'bias' ? 0.1 * u : 0.15 * u;
    });
    tensors.set(name, values);
    shapes.set(name, shape);
  };
  const linear = (name: string, out: number, inp: number) => {
    add(`${name}.weight`, [out, inp]);
    add(`${name}.bias`, [out], 'bias');
  };
  const norm = (name: string) => {
    add(`${name}.weight`, [h], 'gain');
    add(`${name}.bias`, [h], 'bias');
  };
  add(`${prefix}embeddings.word_embeddings.weight`, [tok.vocabSize, h]);
  add(`${prefix}embeddings.position_embeddings.weight`, [spec.maxPositions, h]);
  add(`${prefix}embeddings.token_type_embeddings.weight`, [family.typeVocab, h]);
  norm(`${prefix}embeddings.LayerNorm`);
  for (let l = 0; l < spec.layers; l++) {
    const p = `${prefix}encoder.layer.${l}.`;
    linear(`${p}attention.self.query`, h, h);
    linear(`${p}attention.self.key`, h, h);
    linear(`${p}attention.self.value`, h, h);
    linear(`${p}attention.output.dense`, h, h);
    norm(`${p}attention.output.LayerNorm`);
    linear(`${p}intermediate.dense`, spec.intermediate, h);
    linear(`${p}output.dense`, h, spec.intermediate);
    norm(`${p}output.LayerNorm`);
  }
  if (spec.family === 'bert') linear(`${prefix}pooler.dense`, h, h); // BertModel checkpoints carry the pooler too
  if (classifier && spec.family === 'bert') linear('classifier', spec.numLabels!, h);
  if (classifier && spec.family === 'xlm-roberta') {
    linear('classifier.dense', h, h);
    linear('classifier.out_proj', spec.numLabels!, h);
  }

  mkdirSync(dir, { recursive: true });
  writeSafetensors(
    join(dir, 'model.safetensors'),
    [...tensors].map(([name, data]) => ({ name, tensor: { kind: 'f32' as const, shape: shapes.get(name)!, data } })),
    'F32',
  );
  const id2label = classifier ? Object.fromEntries(Array.from({ length: spec.numLabels! }, (_, i) => [String(i), `label_${i}`])) : undefined;
  writeJson(join(dir, 'config.json'), {
    architectures: [classifier ? family.classifier : family.model],
    model_type: family.modelType,
    vocab_size: tok.vocabSize,
    hidden_size: h,
    num_hidden_layers: spec.layers,
    num_attention_heads: spec.heads,
    intermediate_size: spec.intermediate,
    hidden_act: spec.hiddenAct ?? 'gelu',
    max_position_embeddings: spec.maxPositions,
    type_vocab_size: family.typeVocab,
    layer_norm_eps: spec.layerNormEps ?? 1e-12,
    pad_token_id: family.padId,
    position_embedding_type: 'absolute',
    ...(id2label ? { id2label, label2id: Object.fromEntries(Object.entries(id2label).map(([k, v]) => [v, Number(k)])) } : {}),
  });
  writeJson(join(dir, 'tokenizer.json'), tok.tokenizerJson);
  writeJson(join(dir, 'tokenizer_config.json'), tok.tokenizerConfig);
  if (st) writeSentenceTransformers(dir, h, st);
  return { dir, tensors, spec, vocabSize: tok.vocabSize };
}

function writeSentenceTransformers(dir: string, hidden: number, st: SentenceTransformersFiles): void {
  const modules = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    ...(st.normalize ? [{ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' }] : []),
  ];
  writeJson(join(dir, 'modules.json'), modules);
  mkdirSync(join(dir, '1_Pooling'), { recursive: true });
  writeJson(join(dir, '1_Pooling/config.json'), {
    word_embedding_dimension: hidden,
    pooling_mode_cls_token: st.pooling === 'cls',
    pooling_mode_mean_tokens: st.pooling === 'mean',
    pooling_mode_max_tokens: false,
    pooling_mode_mean_sqrt_len_tokens: false,
    pooling_mode_weightedmean_tokens: false,
    pooling_mode_lasttoken: st.pooling === 'lasttoken',
  });
  writeJson(join(dir, 'sentence_bert_config.json'), { max_seq_length: st.maxSeqLength ?? 256, do_lower_case: false });
}

// ---------------------------------------------------------------------------------------------
// Reference forward (float64, one sequence at a time, straight from the stored tensor names).

/** Final hidden states of every token, as transformers' BertModel / XLMRobertaModel compute them. */
export function referenceEncoderStates(model: WrittenEncoder, ids: readonly number[], typeIds?: readonly number[]): Float64Array[] {
  const { spec, tensors } = model;
  const family = FAMILY[spec.family];
  const prefix = spec.numLabels !== null ? family.prefix : '';
  const t = (name: string) => {
    const v = tensors.get(prefix + name);
    if (!v) throw new Error(`reference: no tensor ${prefix + name}`);
    return v;
  };
  const h = spec.hidden;
  const eps = spec.layerNormEps ?? 1e-12;
  const offset = spec.family === 'xlm-roberta' ? family.padId + 1 : 0;
  const row = (table: Float32Array, i: number) => table.subarray(i * h, (i + 1) * h);
  let x = ids.map((id, i) =>
    layerNorm(
      Float64Array.from(row(t('embeddings.word_embeddings.weight'), id), (v, j) => v + row(t('embeddings.position_embeddings.weight'), offset + i)[j] + row(t('embeddings.token_type_embeddings.weight'), typeIds?.[i] ?? 0)[j]),
      t('embeddings.LayerNorm.weight'),
      t('embeddings.LayerNorm.bias'),
      eps,
    ),
  );
  const hd = h / spec.heads;
  for (let l = 0; l < spec.layers; l++) {
    const p = `encoder.layer.${l}.`;
    const lin = (name: string, v: Float64Array, out: number) => linear(t(`${p}${name}.weight`), t(`${p}${name}.bias`), v, out);
    const q = x.map((v) => lin('attention.self.query', v, h));
    const k = x.map((v) => lin('attention.self.key', v, h));
    const vv = x.map((v) => lin('attention.self.value', v, h));
    const attn = x.map((_, i) => {
      const out = new Float64Array(h);
      for (let head = 0; head < spec.heads; head++) {
        const scores = k.map((kj) => {
          let dot = 0;
          for (let d = 0; d < hd; d++) dot += q[i][head * hd + d] * kj[head * hd + d];
          return dot / Math.sqrt(hd);
        });
        const max = Math.max(...scores);
        const exps = scores.map((s) => Math.exp(s - max));
        const total = exps.reduce((a, b) => a + b, 0);
        vv.forEach((vj, j) => {
          for (let d = 0; d < hd; d++) out[head * hd + d] += (exps[j] / total) * vj[head * hd + d];
        });
      }
      return out;
    });
    const afterAttn = x.map((xi, i) => {
      const o = lin('attention.output.dense', attn[i], h);
      return layerNorm(xi.map((v, j) => v + o[j]), t(`${p}attention.output.LayerNorm.weight`), t(`${p}attention.output.LayerNorm.bias`), eps);
    });
    x = afterAttn.map((a) => {
      const inner = lin('intermediate.dense', a, spec.intermediate).map((v) => act(v, spec.hiddenAct ?? 'gelu'));
      const o = lin('output.dense', inner, h);
      return layerNorm(a.map((v, j) => v + o[j]), t(`${p}output.LayerNorm.weight`), t(`${p}output.LayerNorm.bias`), eps);
    });
  }
  return x;
}

export function referencePool(states: Float64Array[], pooling: 'CLS' | 'MEAN' | 'LAST'): Float64Array {
  if (pooling === 'CLS') return states[0];
  if (pooling === 'LAST') return states[states.length - 1];
  const out = new Float64Array(states[0].length);
  for (const s of states) s.forEach((v, j) => (out[j] += v / states.length));
  return out;
}

/** The classifier logits of a *ForSequenceClassification checkpoint, from the CLS hidden state. */
export function referenceClassifierLogits(model: WrittenEncoder, cls: Float64Array): Float64Array {
  const { spec, tensors } = model;
  const t = (name: string) => tensors.get(name)!;
  const h = spec.hidden;
  const [first, second] = spec.family === 'bert' ? ['bert.pooler.dense', 'classifier'] : ['classifier.dense', 'classifier.out_proj'];
  const hidden = linear(t(`${first}.weight`), t(`${first}.bias`), cls, h).map(Math.tanh);
  return linear(t(`${second}.weight`), t(`${second}.bias`), hidden, spec.numLabels!);
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

function linear(w: Float32Array, b: Float32Array, x: Float64Array, out: number): Float64Array {
  const inp = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = b[o];
    for (let i = 0; i < inp; i++) s += w[o * inp + i] * x[i];
    y[o] = s;
  }
  return y;
}

function layerNorm(x: Float64Array, gain: Float32Array, bias: Float32Array, eps: number): Float64Array {
  const mean = x.reduce((a, b) => a + b, 0) / x.length;
  const variance = x.reduce((a, b) => a + (b - mean) ** 2, 0) / x.length;
  return x.map((v, i) => ((v - mean) / Math.sqrt(variance + eps)) * gain[i] + bias[i]);
}

function act(v: number, kind: 'gelu' | 'gelu_new' | 'relu'): number {
  if (kind === 'relu') return Math.max(0, v);
  if (kind === 'gelu_new') return 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));
  return 0.5 * v * (1 + erf(v / Math.SQRT2));
}

/** erf by its Maclaurin series (|x| < 3) or continued fraction (far tail): float64 accurate. */
export function erf(x: number): number {
  const sign = Math.sign(x);
  const a = Math.abs(x);
  if (a < 3) {
    let term = a;
    let sum = a;
    for (let n = 1; n < 100; n++) {
      term *= (-a * a) / n;
      sum += term / (2 * n + 1);
      if (Math.abs(term) < 1e-17) break;
    }
    return (sign * 2 * sum) / Math.sqrt(Math.PI);
  }
  let f = 0;
  for (let n = 60; n >= 1; n--) f = n / 2 / (a + f);
  return sign * (1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / (a + f));
}

function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 2));
}
