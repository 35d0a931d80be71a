// Small real tokenizer.json files the encoder tests build (a BERT-style WordPiece and an
// XLM-RoBERTa-style Unigram), and independent plain-TypeScript tokenizers for the same
// vocabularies: the server's token ids are checked against these, not against themselves.

export interface TestTokenizerFiles {
  tokenizerJson: object;
  tokenizerConfig: object;
  vocabSize: number;
}

// ---------------------------------------------------------------------------------------------
// WordPiece (bert-base-uncased layout: BertNormalizer, BertPreTokenizer, [CLS] A [SEP] B [SEP]).

const BERT_SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const BERT_WORDS = [
  'the', 'quick', 'brown', 'fox', 'jump', '##s', '##ed', '##ing', 'over', 'lazy', 'dog', 'a', 'cat', 'sat', 'on', 'mat',
  'hello', 'world', 'un', '##believ', '##able', 'run', '##ning', 'what', 'is', 'pan', '##da', 'bear', 'eat', 'bamboo',
  'paris', 'capital', 'of', 'france', 'city', 'river', 'berlin', 'germany', '.', ',', '!', '?', "'",
];
const LETTERS = 'abcdefghijklmnopqrstuvwxyz0123456789'.split('');

export const BERT_VOCAB: readonly string[] = [...BERT_SPECIALS, ...BERT_WORDS, ...LETTERS, ...LETTERS.map((c) => `##${c}`)];

export function bertTokenizerFiles(): TestTokenizerFiles {
  const vocab = Object.fromEntries(BERT_VOCAB.map((t, i) => [t, i]));
  const special = (content: string) => ({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const token = (id: string, typeId: number) => ({ SpecialToken: { id, type_id: typeId } });
  const seq = (id: 'A' | 'B', typeId: number) => ({ Sequence: { id, type_id: typeId } });
  return {
    vocabSize: BERT_VOCAB.length,
    tokenizerJson: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: BERT_SPECIALS.map(special),
      normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      post_processor: {
        type: 'TemplateProcessing',
        single: [token('[CLS]', 0), seq('A', 0), token('[SEP]', 0)],
        pair: [token('[CLS]', 0), seq('A', 0), token('[SEP]', 0), seq('B', 1), token('[SEP]', 1)],
        special_tokens: {
          '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
          '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] },
        },
      },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
      model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
    },
    tokenizerConfig: {
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      mask_token: '[MASK]',
      model_max_length: 512,
    },
  };
}

/** BERT's basic tokenizer (lower-case, strip accents, split on spaces and punctuation) + greedy WordPiece. */
export function referenceBertEncode(text: string, pair?: string): { ids: number[]; typeIds: number[] } {
  const index = new Map(BERT_VOCAB.map((t, i) => [t, i]));
  const pieces = (s: string) => basicTokens(s).flatMap((word) => wordPiece(word, index));
  const a = pieces(text);
  const ids = [index.get('[CLS]')!, ...a, index.get('[SEP]')!];
  const typeIds = ids.map(() => 0);
  if (pair !== undefined) {
    const b = [...pieces(pair), index.get('[SEP]')!];
    ids.push(...b);
    typeIds.push(...b.map(() => 1));
  }
  return { ids, typeIds };
}

function basicTokens(text: string): string[] {
  const lowered = text.toLowerCase().normalize('NFD').replace(/\p{Mn}/gu, '');
  const out: string[] = [];
  for (const word of lowered.split(/\s+/).filter(Boolean)) {
    let current = '';
    for (const ch of word) {
      if (/[\p{P}\p{S}]/u.test(ch)) {
        if (current) out.push(current);
        out.push(ch);
        current = '';
      } else {
        current += ch;
      }
    }
    if (current) out.push(current);
  }
  return out;
}

function wordPiece(word: string, index: ReadonlyMap<string, number>): number[] {
  const ids: number[] = [];
  let start = 0;
  while (start < word.length) {
    let end = word.length;
    let found: number | undefined;
    while (end > start) {
      const piece = (start > 0 ? '##' : '') + word.slice(start, end);
      found = index.get(piece);
      if (found !== undefined) break;
      end--;
    }
    if (found === undefined) return [index.get('[UNK]')!];
    ids.push(found);
    start = end;
  }
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Unigram (xlm-roberta-base layout: Metaspace '▁', <s> A </s> </s> B </s>).

const XLMR_SPECIALS = ['<s>', '<pad>', '</s>', '<unk>'];
const XLMR_PIECES: ReadonlyArray<readonly [string, number]> = [
  ['▁the', -2.1], ['▁quick', -4.2], ['▁brown', -4.4], ['▁fox', -4.9], ['▁jump', -5.3], ['s', -3.1], ['ed', -3.6],
  ['▁over', -4.0], ['▁lazy', -5.5], ['▁dog', -4.6], ['▁a', -2.7], ['▁cat', -4.8], ['▁sat', -5.1], ['▁on', -3.3],
  ['▁mat', -5.7], ['▁hello', -4.3], ['▁world', -4.1], ['▁Paris', -5.0], ['▁is', -2.9], ['▁capital', -5.2],
  ['▁of', -2.5], ['▁France', -5.4], ['▁Berlin', -5.6], ['▁city', -4.7], ['▁river', -5.8], ['▁Hund', -6.1],
  ['▁der', -3.9], ['▁die', -3.8], ['▁Katze', -6.3], ['▁schläft', -6.6], ['▁', -3.0], ['.', -2.2], [',', -2.4],
  ['!', -3.4], ['?', -3.5], ['er', -3.7], ['in', -3.75], ['an', -3.8], ['▁un', -4.45],
];
const XLMR_CHARS = [...'abcdefghijklmnopqrstuvwxyzäöüABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'].map((c, i) => [c, -8 - i / 100] as const);

export const XLMR_VOCAB: ReadonlyArray<readonly [string, number]> = [...XLMR_SPECIALS.map((s) => [s, 0] as const), ...XLMR_PIECES, ...XLMR_CHARS];

export function xlmrTokenizerFiles(): TestTokenizerFiles {
  const special = (content: string, id: number) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const token = (id: string) => ({ SpecialToken: { id, type_id: 0 } });
  const seq = (id: 'A' | 'B') => ({ Sequence: { id, type_id: 0 } });
  const metaspace = { replacement: '▁', prepend_scheme: 'always', split: true };
  return {
    vocabSize: XLMR_VOCAB.length,
    tokenizerJson: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: XLMR_SPECIALS.map(special),
      normalizer: { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
      pre_tokenizer: { type: 'Metaspace', ...metaspace },
      post_processor: {
        type: 'TemplateProcessing',
        single: [token('<s>'), seq('A'), token('</s>')],
        pair: [token('<s>'), seq('A'), token('</s>'), token('</s>'), seq('B'), token('</s>')],
        special_tokens: {
          '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] },
          '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] },
        },
      },
      decoder: { type: 'Metaspace', ...metaspace },
      model: { type: 'Unigram', unk_id: 3, vocab: XLMR_VOCAB.map(([p, s]) => [p, s]), byte_fallback: false },
    },
    tokenizerConfig: {
      tokenizer_class: 'XLMRobertaTokenizer',
      bos_token: '<s>',
      eos_token: '</s>',
      sep_token: '</s>',
      cls_token: '<s>',
      unk_token: '<unk>',
      pad_token: '<pad>',
      mask_token: '<mask>',
      model_max_length: 512,
    },
  };
}

/** Metaspace pre-tokenization + Viterbi over the Unigram scores (texts use only in-vocabulary characters). */
export function referenceXlmrEncode(text: string, pair?: string): number[] {
  const index = new Map(XLMR_VOCAB.map(([p], i) => [p, i]));
  const scores = new Map(XLMR_VOCAB.map(([p, s]) => [p, s]));
  const pieces = (s: string) =>
    s
      .replace(/ {2,}/g, ' ')
      .split(' ')
      .map((w) => `▁${w}`)
      .flatMap((word) => viterbi(word, index, scores));
  const ids = [0, ...pieces(text), 2];
  if (pair !== undefined) ids.push(2, ...pieces(pair), 2);
  return ids;
}

function viterbi(word: string, index: ReadonlyMap<string, number>, scores: ReadonlyMap<string, number>): number[] {
  const chars = [...word];
  const best: Array<{ score: number; from: number; piece: string } | null> = [{ score: 0, from: -1, piece: '' }];
  for (let end = 1; end <= chars.length; end++) {
    best[end] = null;
    for (let start = 0; start < end; start++) {
      const prev = best[start];
      const piece = chars.slice(start, end).join('');
      const score = scores.get(piece);
      if (!prev || score === undefined || XLMR_SPECIALS.includes(piece)) continue;
      if (!best[end] || prev.score + score > best[end]!.score) best[end] = { score: prev.score + score, from: start, piece };
    }
    if (!best[end]) throw new Error(`reference Unigram: no segmentation of "${word}" (character outside the test vocabulary)`);
  }
  const ids: number[] = [];
  for (let at = chars.length; at > 0; at = best[at]!.from) ids.unshift(index.get(best[at]!.piece)!);
  return ids;
}
