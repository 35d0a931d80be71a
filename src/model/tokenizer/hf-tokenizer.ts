// Tokenizer over a Hugging Face tokenizer.json (+ tokenizer_config.json).
//
// Encoding runs on @huggingface/tokenizers rather than @huggingface/transformers: transformers'
// tokenizers use this very package underneath (same ids, measured in
// shared/notes/runtime-probe.md §4), while transformers drags in ~475 MB (two onnxruntimes, sharp).
// Decoding is ours, on top of the package's decoder chain, because the package has no
// spaces_between_special_tokens, throws on empty input and defaults clean-up to on.

import { Tokenizer as LibTokenizer } from '@huggingface/tokenizers';
import type { DecodeOptions, Tokenizer } from '../types';
import { tokenBytesResolver } from './token-bytes';
import { withSentencePieceWordSplit } from './word-split';

type Json = Record<string, unknown>;

interface AddedTokenJson {
  id: number;
  content: string;
  special?: boolean;
}

// Tokenizer classes whose fast implementation rebuilds the post-processor from
// add_bos_token / add_eos_token (transformers' LlamaTokenizerFast.update_post_processor).
const BOS_EOS_FLAG_CLASSES = /^(Llama|CodeLlama|Gemma|Gemma2|Cohere)Tokenizer(Fast)?$/;

/** A special token in tokenizer_config.json is either a string or an AddedToken dict. */
function specialTokenText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as Json).content === 'string') {
    return (value as Json).content as string;
  }
  return null;
}

function asObject(value: unknown, what: string): Json {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${what} must be a JSON object`);
  }
  return value as Json;
}

class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  readonly padTokenId: number | null;
  readonly bosToken: string | null;
  readonly eosToken: string | null;

  private readonly lib: LibTokenizer;
  private readonly vocab: readonly (string | undefined)[];
  private readonly specialIds: ReadonlySet<number>;
  /** Set when BOS/EOS come from add_bos_token/add_eos_token instead of the post-processor. */
  private readonly explicitFlags: { addBos: boolean; addEos: boolean } | null;
  private readonly cleanUpSpaces: boolean;
  private readonly addedIds: ReadonlySet<number>;
  private readonly resolveBytes: (token: string) => Uint8Array;
  private readonly bytesCache: (Uint8Array | undefined)[] = [];

  constructor(tokenizerJson: Json, config: Json) {
    this.lib = new LibTokenizer(tokenizerJson, config);
    // The package registers added tokens into model.vocab, so this array covers the whole id space.
    const vocab = (this.lib.model as unknown as { vocab: (string | undefined)[] }).vocab;
    this.vocab = vocab;
    this.vocabSize = vocab.length;

    this.bosToken = specialTokenText(config.bos_token);
    this.eosToken = specialTokenText(config.eos_token);
    const padToken = specialTokenText(config.pad_token);
    this.bosTokenId = this.idOf(this.bosToken);
    this.eosTokenId = this.idOf(this.eosToken);
    this.padTokenId = this.idOf(padToken);

    // HF's all_special_ids: added tokens flagged special plus the named special tokens.
    const special = new Set<number>();
    const added = (tokenizerJson.added_tokens ?? []) as AddedTokenJson[];
    for (const token of added) if (token.special) special.add(token.id);
    const named = [config.bos_token, config.eos_token, config.unk_token, config.pad_token,
      config.sep_token, config.cls_token, config.mask_token,
      ...((config.additional_special_tokens as unknown[] | undefined) ?? [])];
    for (const value of named) {
      const id = this.idOf(specialTokenText(value));
      if (id !== null) special.add(id);
    }
    this.specialIds = special;

    const tokenizerClass = typeof config.tokenizer_class === 'string' ? config.tokenizer_class : '';
    const hasFlags = typeof config.add_bos_token === 'boolean' || typeof config.add_eos_token === 'boolean';
    this.explicitFlags = hasFlags && (BOS_EOS_FLAG_CLASSES.test(tokenizerClass) || !tokenizerJson.post_processor)
      ? { addBos: config.add_bos_token === true, addEos: config.add_eos_token === true }
      : null;
    // transformers defaults clean_up_tokenization_spaces to false; the package defaults it to true.
    this.cleanUpSpaces = config.clean_up_tokenization_spaces === true;

    this.addedIds = new Set(added.map((t) => t.id));
    this.resolveBytes = tokenBytesResolver(tokenizerJson.decoder);
  }

  encode(text: string, opts?: { addSpecialTokens?: boolean }): number[] {
    const addSpecial = opts?.addSpecialTokens ?? true;
    if (!this.explicitFlags) {
      return this.lib.encode(text, { add_special_tokens: addSpecial }).ids;
    }
    const ids = this.lib.encode(text, { add_special_tokens: false }).ids;
    if (!addSpecial) return ids;
    if (this.explicitFlags.addBos && this.bosTokenId !== null) ids.unshift(this.bosTokenId);
    if (this.explicitFlags.addEos && this.eosTokenId !== null) ids.push(this.eosTokenId);
    return ids;
  }

  encodePair(text: string, pair: string, opts?: { addSpecialTokens?: boolean }): { ids: number[]; tokenTypeIds: number[] } {
    const encoded = this.lib.encode(text, { text_pair: pair, add_special_tokens: opts?.addSpecialTokens ?? true, return_token_type_ids: true });
    return { ids: encoded.ids, tokenTypeIds: encoded.token_type_ids };
  }

  decode(ids: readonly number[], opts?: DecodeOptions): string {
    const skipSpecial = opts?.skipSpecialTokens ?? true;
    const spaced = opts?.spacesBetweenSpecialTokens ?? true;
    // Like transformers' slow decode: runs of ordinary tokens go through the decoder chain,
    // kept special tokens stand alone, and the pieces are joined with ' ' when spaced.
    const pieces: string[] = [];
    let run: string[] = [];
    const flush = () => {
      if (run.length === 0) return;
      const text = this.decodeRun(run);
      if (text.length > 0) pieces.push(text);
      run = [];
    };
    for (const id of ids) {
      const token = this.vocab[id];
      if (token === undefined) continue; // out-of-range ids are dropped, as the Rust tokenizer does
      if (this.specialIds.has(id)) {
        if (skipSpecial) continue;
        flush();
        pieces.push(token);
      } else {
        run.push(token);
      }
    }
    flush();
    const text = pieces.join(spaced ? ' ' : '');
    return this.cleanUpSpaces ? cleanUpTokenizationSpaces(text) : text;
  }

  tokenBytes(id: number): Uint8Array {
    let bytes = this.bytesCache[id];
    if (bytes === undefined) {
      const token = this.vocab[id];
      // Ids past the tokenizer (a model's padded embedding rows) contribute nothing, as in decode.
      if (token === undefined) return EMPTY;
      // Added tokens are matched verbatim, never through the model's byte mapping.
      bytes = this.specialIds.has(id) || this.addedIds.has(id) ? utf8(token) : this.resolveBytes(token);
      this.bytesCache[id] = bytes;
    }
    return bytes;
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? this.vocab[id] : undefined;
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  private decodeRun(tokens: string[]): string {
    const decoder = this.lib.decoder as unknown as ((tokens: string[]) => string) | null;
    return decoder ? decoder(tokens) : tokens.join(' ');
  }

  private idOf(token: string | null): number | null {
    if (token === null) return null;
    return this.lib.token_to_id(token) ?? null;
  }
}

const EMPTY = new Uint8Array(0);
const encoder = new TextEncoder();
function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** transformers' clean_up_tokenization (applied only when the config asks for it). */
function cleanUpTokenizationSpaces(text: string): string {
  return text
    .replace(/ \./g, '.').replace(/ \?/g, '?').replace(/ !/g, '!').replace(/ ,/g, ',')
    .replace(/ ' /g, "'").replace(/ n't/g, "n't").replace(/ 'm/g, "'m").replace(/ 's/g, "'s")
    .replace(/ 've/g, "'ve").replace(/ 're/g, "'re");
}

/**
 * Builds a Tokenizer from the parsed contents of tokenizer.json and tokenizer_config.json
 * (null when the directory has none). BOS/EOS/PAD come from the config.
 */
export function createTokenizerFromHfFiles(tokenizerJson: object, tokenizerConfig: object | null): Tokenizer {
  const json = asObject(tokenizerJson, 'tokenizer.json');
  const config = tokenizerConfig === null ? {} : asObject(tokenizerConfig, 'tokenizer_config.json');
  // The package requires these keys to exist (null is allowed).
  const complete: Json = { normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null,
    added_tokens: [], ...json };
  return new HfTokenizer(withSentencePieceWordSplit(complete), config);
}
