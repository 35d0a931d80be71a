// GGUF vocabulary -> Hugging Face tokenizer.json + tokenizer_config.json, the way transformers'
// GGUF loader converts it (which is what vLLM serves for a .gguf), so the same tokenizer code
// path runs for both model formats.
//   llama: SentencePiece BPE. Merges are derived from the scores: every split of a normal token
//          into two vocabulary pieces, ranked by the merged token's score. With byte fallback this
//          reproduces SentencePiece's "merge the best-scoring adjacent pair" loop.
//   gpt2:  byte-level BPE with tokenizer.ggml.merges; the pre-tokenizer regex follows
//          tokenizer.ggml.pre (gguf-pre-tokenizers.ts: llama-bpe, qwen2, gpt-4o, GPT-2's default).

import { byteLevelPreTokenizer, preTokenizerJson } from './gguf-pre-tokenizers';

type Json = Record<string, unknown>;

/** llama.cpp's token types (tokenizer.ggml.token_type). */
const GgufTokenType = {
  Normal: 1,
  Unknown: 2,
  Control: 3,
  UserDefined: 4,
  Unused: 5,
  Byte: 6,
} as const;

const SPIECE_SPACE = '▁';

/** @huggingface/gguf gives plain values, or {value, type} with typedMetadata. */
function read(metadata: Record<string, unknown>, key: string): unknown {
  const raw = metadata[key];
  if (raw && typeof raw === 'object' && !Array.isArray(raw) && 'value' in raw) return (raw as Json).value;
  return raw;
}

function readTokenId(metadata: Record<string, unknown>, key: string, vocabSize: number): number | null {
  const value = read(metadata, key);
  const id = typeof value === 'bigint' ? Number(value) : value;
  // Absent ids are written as -1 (0xFFFFFFFF once read as uint32).
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < vocabSize ? id : null;
}

function readBool(metadata: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const value = read(metadata, key);
  return typeof value === 'boolean' ? value : fallback;
}

function readArray<T>(metadata: Record<string, unknown>, key: string): T[] | null {
  const value = read(metadata, key);
  return Array.isArray(value) ? (value as T[]) : null;
}

interface GgufVocab {
  tokens: string[];
  types: number[];
  bos: number | null;
  eos: number | null;
  unk: number | null;
  pad: number | null;
  addBos: boolean;
  addEos: boolean;
}

function readVocab(metadata: Record<string, unknown>, defaultAddBos: boolean): GgufVocab {
  const tokens = readArray<string>(metadata, 'tokenizer.ggml.tokens');
  if (!tokens || tokens.length === 0) throw new Error('GGUF file has no tokenizer.ggml.tokens');
  const types = readArray<number>(metadata, 'tokenizer.ggml.token_type') ?? tokens.map(() => GgufTokenType.Normal);
  const n = tokens.length;
  return {
    tokens,
    types,
    bos: readTokenId(metadata, 'tokenizer.ggml.bos_token_id', n),
    eos: readTokenId(metadata, 'tokenizer.ggml.eos_token_id', n),
    unk: readTokenId(metadata, 'tokenizer.ggml.unknown_token_id', n),
    pad: readTokenId(metadata, 'tokenizer.ggml.padding_token_id', n),
    addBos: readBool(metadata, 'tokenizer.ggml.add_bos_token', defaultAddBos),
    addEos: readBool(metadata, 'tokenizer.ggml.add_eos_token', false),
  };
}

/** First id wins when a vocabulary repeats a string (the later ids stay reachable by id only). */
function vocabMap(tokens: string[]): Json {
  // No prototype: a token spelled '__proto__' or 'constructor' is just a key.
  const map = Object.create(null) as Record<string, number>;
  tokens.forEach((token, id) => {
    if (map[token] === undefined) map[token] = id;
  });
  return map;
}

/** Control/unknown tokens become special added tokens; user-defined ones plain added tokens. */
function addedTokens(vocab: GgufVocab): Json[] {
  const added: Json[] = [];
  vocab.types.forEach((type, id) => {
    const special = type === GgufTokenType.Control || type === GgufTokenType.Unknown;
    if (!special && type !== GgufTokenType.UserDefined) return;
    added.push({ id, content: vocab.tokens[id], single_word: false, lstrip: false, rstrip: false,
      normalized: false, special });
  });
  return added;
}

function postProcessor(vocab: GgufVocab): Json {
  const single: Json[] = [];
  const pair: Json[] = [];
  const specialTokens: Json = {};
  const special = (id: number | null): Json[] => {
    if (id === null) return [];
    const token = vocab.tokens[id];
    specialTokens[token] = { id: token, ids: [id], tokens: [token] };
    return [{ SpecialToken: { id: token, type_id: 0 } }];
  };
  const bos = vocab.addBos ? special(vocab.bos) : [];
  const eos = vocab.addEos ? special(vocab.eos) : [];
  single.push(...bos, { Sequence: { id: 'A', type_id: 0 } }, ...eos);
  pair.push(...bos, { Sequence: { id: 'A', type_id: 0 } }, ...eos, ...bos, { Sequence: { id: 'B', type_id: 1 } }, ...eos);
  return { type: 'TemplateProcessing', single, pair, special_tokens: specialTokens };
}

/**
 * Merges of a SentencePiece BPE vocabulary: every split of a normal token into two vocabulary
 * pieces, best-scoring merged token first (ties: better-scoring pieces first), as transformers does.
 */
function deriveSentencePieceMerges(tokens: string[], scores: number[], types: number[]): [string, string][] {
  const scoreOf = new Map<string, number>();
  tokens.forEach((token, id) => {
    if (!scoreOf.has(token)) scoreOf.set(token, scores[id] ?? 0);
  });
  const merges: { left: string; right: string; score: number; leftScore: number; rightScore: number }[] = [];
  tokens.forEach((token, id) => {
    if (types[id] !== GgufTokenType.Normal) return;
    const chars = Array.from(token);
    let left = '';
    for (let i = 1; i < chars.length; i++) {
      left += chars[i - 1];
      const right = token.slice(left.length);
      const leftScore = scoreOf.get(left);
      const rightScore = scoreOf.get(right);
      if (leftScore === undefined || rightScore === undefined) continue;
      merges.push({ left, right, score: scores[id] ?? 0, leftScore, rightScore });
    }
  });
  merges.sort((a, b) => b.score - a.score || b.leftScore - a.leftScore || b.rightScore - a.rightScore);
  return merges.map((m) => [m.left, m.right]);
}

function llamaTokenizerJson(metadata: Record<string, unknown>): { tokenizerJson: Json; tokenizerConfig: Json } {
  const vocab = readVocab(metadata, true);
  const scores = readArray<number>(metadata, 'tokenizer.ggml.scores') ?? vocab.tokens.map(() => 0);
  const addPrefixSpace = readBool(metadata, 'tokenizer.ggml.add_space_prefix', true);
  const normalizers: Json[] = [{ type: 'Replace', pattern: { String: ' ' }, content: SPIECE_SPACE }];
  if (addPrefixSpace) normalizers.unshift({ type: 'Prepend', prepend: SPIECE_SPACE });
  const decoders: Json[] = [
    { type: 'Replace', pattern: { String: SPIECE_SPACE }, content: ' ' },
    { type: 'ByteFallback' },
    { type: 'Fuse' },
  ];
  if (addPrefixSpace) decoders.push({ type: 'Strip', content: ' ', start: 1, stop: 0 });
  const unkToken = vocab.unk === null ? null : vocab.tokens[vocab.unk];
  const tokenizerJson: Json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(vocab),
    normalizer: { type: 'Sequence', normalizers },
    pre_tokenizer: null,
    post_processor: postProcessor(vocab),
    decoder: { type: 'Sequence', decoders },
    model: {
      type: 'BPE', dropout: null, unk_token: unkToken, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false,
      vocab: vocabMap(vocab.tokens),
      merges: deriveSentencePieceMerges(vocab.tokens, scores, vocab.types),
    },
  };
  return { tokenizerJson, tokenizerConfig: tokenizerConfig(metadata, vocab, 'LlamaTokenizer', { legacy: true }) };
}

function gpt2TokenizerJson(metadata: Record<string, unknown>): { tokenizerJson: Json; tokenizerConfig: Json } {
  const pre = byteLevelPreTokenizer(read(metadata, 'tokenizer.ggml.pre'));
  const vocab = readVocab(metadata, pre.addBosByDefault);
  const merges = readArray<string>(metadata, 'tokenizer.ggml.merges');
  if (!merges) throw new Error('GGUF gpt2 vocabulary has no tokenizer.ggml.merges');
  const tokenizerJson: Json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(vocab),
    normalizer: pre.nfc ? { type: 'NFC' } : null,
    pre_tokenizer: preTokenizerJson(pre),
    post_processor: postProcessor(vocab),
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, ignore_merges: pre.ignoreMerges,
      vocab: vocabMap(vocab.tokens),
      merges,
    },
  };
  return { tokenizerJson, tokenizerConfig: tokenizerConfig(metadata, vocab, 'PreTrainedTokenizerFast', {}) };
}

function tokenizerConfig(metadata: Record<string, unknown>, vocab: GgufVocab, tokenizerClass: string, extra: Json): Json {
  const name = (id: number | null) => (id === null ? null : vocab.tokens[id]);
  const config: Json = {
    tokenizer_class: tokenizerClass,
    bos_token: name(vocab.bos),
    eos_token: name(vocab.eos),
    unk_token: name(vocab.unk),
    pad_token: name(vocab.pad),
    add_bos_token: vocab.addBos,
    add_eos_token: vocab.addEos,
    clean_up_tokenization_spaces: false,
    ...extra,
  };
  const template = read(metadata, 'tokenizer.chat_template');
  if (typeof template === 'string') config.chat_template = template;
  return config;
}

/**
 * Builds the tokenizer.json and tokenizer_config.json contents equivalent to a GGUF file's
 * vocabulary (`metadata` as read by @huggingface/gguf).
 */
export function ggufVocabToTokenizerJson(metadata: Record<string, unknown>): { tokenizerJson: object; tokenizerConfig: object } {
  const model = read(metadata, 'tokenizer.ggml.model');
  switch (model) {
    case 'llama':
      return llamaTokenizerJson(metadata);
    case 'gpt2':
      return gpt2TokenizerJson(metadata);
    default:
      throw new Error(`unsupported GGUF tokenizer model '${String(model)}' (supported: llama, gpt2)`);
  }
}

// Turn-ending tokens llama.cpp stops at by their text, besides EOS (its end-of-generation set).
const END_OF_TURN_TEXTS = ['<|eot_id|>', '<|eom_id|>', '<|im_end|>', '<|end|>', '<|return|>', '<|call|>', '<end_of_turn>', '<|endoftext|>', '<EOT>'];

/**
 * Token ids that end generation besides EOS, as llama.cpp finds them: tokenizer.ggml.eot_token_id /
 * eom_token_id and the turn-ending tokens of the chat formats by their text. In harmony
 * vocabularies (<|return|> and <|call|> present) <|end|> only closes a message and does not stop.
 */
export function ggufEndOfGenerationIds(metadata: Record<string, unknown>): number[] {
  const tokens = readArray<string>(metadata, 'tokenizer.ggml.tokens') ?? [];
  const ids = new Set<number>();
  for (const key of ['tokenizer.ggml.eot_token_id', 'tokenizer.ggml.eom_token_id']) {
    const id = readTokenId(metadata, key, tokens.length);
    if (id !== null) ids.add(id);
  }
  const texts = new Set(END_OF_TURN_TEXTS);
  if (tokens.includes('<|return|>') && tokens.includes('<|call|>')) texts.delete('<|end|>');
  tokens.forEach((token, id) => {
    if (texts.has(token)) ids.add(id);
  });
  return [...ids];
}
