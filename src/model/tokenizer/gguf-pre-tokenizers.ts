// The byte-level BPE pre-tokenizers a GGUF names in `tokenizer.ggml.pre`, as the tokenizer.json
// files of those families spell them (llama.cpp's llama-vocab.cpp maps the same names to the same
// splits). A name not listed here is refused: guessing a split gives plausible but wrong ids.

type Json = Record<string, unknown>;

const CONTRACTIONS = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
// Llama 3: letters after at most one non-letter, digits in runs of at most three.
const LLAMA3_SPLIT =
  `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
// Qwen2 / Qwen3: as Llama 3 but every digit alone.
const QWEN2_SPLIT =
  `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
// o200k (GPT-4o, gpt-oss, Llama 4): words split at case changes, contractions stay on their word,
// '/' joins a punctuation run's trailing newlines.
const UPPER = '[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]';
const LOWER = '[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]';
const O200K_SPLIT =
  `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTIONS}?|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTIONS}?`
  + '|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';

// Tekken (Mistral Nemo, Ministral, Mistral Small 3): o200k's word rules without contractions, digits one by one.
const TEKKEN_SPLIT =
  `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*`
  + '|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';

export interface ByteLevelPreTokenizer {
  /** The split regex; null = GPT-2's, built into the ByteLevel pre-tokenizer. */
  split: string | null;
  /** Every digit is cut out alone before GPT-2's regex (SmolLM, StarCoder: their `Digits` step). */
  digitsAlone?: boolean;
  /** A word that is itself a vocabulary entry is taken whole (llama.cpp's ignore_merges). */
  ignoreMerges: boolean;
  /** Unicode NFC before splitting (Qwen2's tokenizer.json does it). */
  nfc: boolean;
  /** BOS is added when the file has no tokenizer.ggml.add_bos_token (llama.cpp: Llama 3 does). */
  addBosByDefault: boolean;
}

const GPT2: ByteLevelPreTokenizer = { split: null, ignoreMerges: false, nfc: false, addBosByDefault: false };
const GPT2_SINGLE_DIGITS: ByteLevelPreTokenizer = { ...GPT2, digitsAlone: true };
const LLAMA3: ByteLevelPreTokenizer = { split: LLAMA3_SPLIT, ignoreMerges: true, nfc: false, addBosByDefault: true };
const QWEN2: ByteLevelPreTokenizer = { split: QWEN2_SPLIT, ignoreMerges: false, nfc: true, addBosByDefault: false };
const O200K: ByteLevelPreTokenizer = { split: O200K_SPLIT, ignoreMerges: false, nfc: false, addBosByDefault: false };
const TEKKEN: ByteLevelPreTokenizer = { split: TEKKEN_SPLIT, ignoreMerges: true, nfc: false, addBosByDefault: true };

/** `tokenizer.ggml.pre` -> pre-tokenizer; '' is a file without the key (llama.cpp: "default"). */
const BY_NAME: Readonly<Record<string, ByteLevelPreTokenizer>> = {
  '': GPT2,
  default: GPT2,
  'gpt-2': GPT2,
  'phi-2': GPT2,
  mpt: GPT2,
  olmo: GPT2,
  smollm: GPT2_SINGLE_DIGITS,
  starcoder: GPT2_SINGLE_DIGITS,
  refact: GPT2_SINGLE_DIGITS,
  codeshell: GPT2_SINGLE_DIGITS,
  'llama-bpe': LLAMA3,
  llama3: LLAMA3,
  'llama-v3': LLAMA3,
  'smaug-bpe': LLAMA3,
  qwen2: QWEN2,
  'deepseek-r1-qwen': QWEN2,
  'gpt-4o': O200K,
  llama4: O200K,
  tekken: TEKKEN,
};

/** The pre-tokenizer `tokenizer.ggml.pre` names; throws naming an unknown one. */
export function byteLevelPreTokenizer(pre: unknown): ByteLevelPreTokenizer {
  const name = pre === undefined || pre === null ? '' : typeof pre === 'string' ? pre : JSON.stringify(pre);
  const found = Object.prototype.hasOwnProperty.call(BY_NAME, name) ? BY_NAME[name] : undefined;
  if (!found) {
    const known = Object.keys(BY_NAME).filter((n) => n !== '').join(', ');
    throw new Error(`unsupported GGUF pre-tokenizer tokenizer.ggml.pre='${name}' (supported: ${known})`);
  }
  return found;
}

/** The tokenizer.json `pre_tokenizer` of `pre`. */
export function preTokenizerJson(pre: ByteLevelPreTokenizer): Json {
  if (pre.split === null) {
    const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
    return pre.digitsAlone ? { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel] } : byteLevel;
  }
  return {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: pre.split }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    ],
  };
}
