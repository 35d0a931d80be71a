// GGUF byte-level vocabularies per `tokenizer.ggml.pre` (Llama 3, Qwen2/Qwen3, o200k of gpt-oss, Mistral's tekken):
// small vocabularies learned from a corpus of edge cases, written with the project's GGUF writer,
// encoded three ways: the GGUF route, the same vocabulary as the tokenizer.json those families
// ship (loaded by @huggingface/tokenizers) and a plain-TypeScript llama.cpp-style reference.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf } from '@huggingface/gguf';
import { gv, writeGguf } from '../../../src/model/gguf/writer';
import { createTokenizerFromGguf, createTokenizerFromHfFiles, ggufEndOfGenerationIds } from '../../../src/model/tokenizer';
import {
  ByteLevelBpeReference, EDGE_CASES as TRICKY, EDGE_TRAINING as TRAINING, splitWords, trainMerges, vocabularyOf, type ReferencePre,
} from '../../helpers/byte-level-bpe-reference';

const SPECIAL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];

/** GPT-2's ByteLevel pre-tokenizer with its built-in regex; SmolLM and StarCoder cut digits out first. */
function byteLevelWithRegex(digitsAlone: boolean): object {
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return digitsAlone ? { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel] } : byteLevel;
}

/** The tokenizer.json each family ships, around the given vocabulary. */
function shippedTokenizerJson(pre: ReferencePre, tokens: string[], merges: [string, string][]): object {
  const split: Partial<Record<ReferencePre, string>> = {
    'llama-bpe': "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    qwen2: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    'gpt-4o': "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
      + "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
      + '|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
    tekken: "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
      + '|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
  };
  const vocab = Object.fromEntries(tokens.map((t, i) => [t, i]));
  return {
    version: '1.0',
    added_tokens: SPECIAL.map((content, i) => ({ id: tokens.length + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: pre === 'qwen2' ? { type: 'NFC' } : null,
    pre_tokenizer: split[pre] === undefined ? byteLevelWithRegex(pre === 'smollm') : {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: split[pre] }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, ignore_merges: pre === 'llama-bpe' || pre === 'tekken', vocab, merges },
  };
}

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-pre-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function writeVocabGguf(name: string, pre: string | null, tokens: string[], merges: [string, string][]) {
  const path = join(dir, `${name}.gguf`);
  const all = [...tokens, ...SPECIAL];
  writeGguf(path, {
    'general.architecture': gv.str('llama'),
    'tokenizer.ggml.model': gv.str('gpt2'),
    ...(pre === null ? {} : { 'tokenizer.ggml.pre': gv.str(pre) }),
    'tokenizer.ggml.tokens': gv.strings(all),
    'tokenizer.ggml.token_type': gv.i32s(all.map((_, i) => (i < tokens.length ? 1 : 3))),
    'tokenizer.ggml.merges': gv.strings(merges.map(([l, r]) => `${l} ${r}`)),
    'tokenizer.ggml.eos_token_id': gv.u32(tokens.length + 2),
    'tokenizer.ggml.add_bos_token': gv.bool(false),
  }, [{ name: 'token_embd.weight', shape: [1, 32], type: 'f32', data: new Float32Array(32) }]);
  return (await gguf(path, { allowLocalFile: true })).metadata as Record<string, unknown>;
}

describe.each(['llama-bpe', 'qwen2', 'gpt-4o', 'tekken', 'gpt-2', 'smollm'] as const)('GGUF tokenizer.ggml.pre = %s', (pre) => {
  const merges = trainMerges(TRAINING, pre, 400);
  const tokens = vocabularyOf(merges);
  const reference = new ByteLevelBpeReference(tokens, merges, pre);
  let metadata: Record<string, unknown>;
  beforeAll(async () => (metadata = await writeVocabGguf(pre, pre, tokens, merges)));

  it('encodes the tricky corpus as the llama.cpp-style reference and the shipped tokenizer.json do', () => {
    const fromGguf = createTokenizerFromGguf(metadata);
    const fromJson = createTokenizerFromHfFiles(shippedTokenizerJson(pre, tokens, merges), { add_bos_token: false });
    for (const text of [...TRICKY, TRICKY.join('')]) {
      const ids = fromGguf.encode(text, { addSpecialTokens: false });
      expect(ids).toEqual(reference.encode(text));
      expect(fromJson.encode(text, { addSpecialTokens: false })).toEqual(ids);
      expect(fromGguf.decode(ids)).toBe(pre === 'qwen2' ? text.normalize('NFC') : text);
    }
  });

  it('matches special tokens whole inside text', () => {
    const tokenizer = createTokenizerFromGguf(metadata);
    const ids = tokenizer.encode('<|im_start|>user\n12<|im_end|>', { addSpecialTokens: false });
    expect(ids[0]).toBe(tokens.length + 1);
    expect(ids[ids.length - 1]).toBe(tokens.length + 2);
  });
});

describe('pre-tokenizer edges', () => {
  it('splits digits singly for qwen2 and in threes for llama-bpe and gpt-4o', () => {
    expect(splitWords('12345', 'qwen2')).toEqual(['1', '2', '3', '4', '5']);
    expect(splitWords('12345', 'llama-bpe')).toEqual(['123', '45']);
    expect(splitWords('12345', 'gpt-4o')).toEqual(['123', '45']);
    expect(splitWords('12345', 'tekken')).toEqual(['1', '2', '3', '4', '5']);
    expect(splitWords('a 12345', 'gpt-2')).toEqual(['a', ' 12345']);
    expect(splitWords('a 12345', 'smollm')).toEqual(['a', ' ', '1', '2', '3', '4', '5']);
  });

  it('keeps contractions apart (Llama 3, Qwen2), on their word (o200k) or as words of their own (tekken)', () => {
    expect(splitWords("WE'LL don't", 'llama-bpe')).toEqual(['WE', "'LL", ' don', "'t"]);
    expect(splitWords("WE'LL don't", 'gpt-4o')).toEqual(["WE'LL", " don't"]);
    expect(splitWords("WE'LL don't", 'tekken')).toEqual(['WE', "'LL", ' don', "'t"]);
  });

  it('splits o200k words at case changes and joins a punctuation run with its newlines and slashes', () => {
    expect(splitWords('HTTPServer camelCase', 'gpt-4o')).toEqual(['HTTPServer', ' camel', 'Case']);
    expect(splitWords('a.\n/b', 'gpt-4o')).toEqual(['a', '.\n/', 'b']);
    expect(splitWords('a.\n/b', 'llama-bpe')).toEqual(['a', '.\n', '/b']);
  });

  it('keeps whitespace runs apart from the next word and newlines together', () => {
    expect(splitWords('a   b\n\n c', 'qwen2')).toEqual(['a', '  ', ' b', '\n\n', ' c']);
  });
});

describe('GGUF pre-tokenizer names', () => {
  const merges = trainMerges(TRAINING.slice(0, 2), 'qwen2', 20);
  const tokens = vocabularyOf(merges);

  it('refuses a pre-tokenizer it does not know, naming it', async () => {
    const metadata = await writeVocabGguf('unknown', 'chameleon', tokens, merges);
    expect(() => createTokenizerFromGguf(metadata)).toThrow(/tokenizer\.ggml\.pre='chameleon'.*supported: .*qwen2.*gpt-4o/);
  });

  it('adds BOS for Llama 3 when the file does not say (llama.cpp does), not for the others', async () => {
    for (const [pre, adds] of [['llama-bpe', true], ['tekken', true], ['qwen2', false], ['gpt-4o', false]] as const) {
      const metadata = await writeVocabGguf(`bos-${pre}`, pre, tokens, merges);
      delete metadata['tokenizer.ggml.add_bos_token'];
      const tokenizer = createTokenizerFromGguf({ ...metadata, 'tokenizer.ggml.bos_token_id': tokens.length });
      expect(tokenizer.encode('a')[0] === tokens.length).toBe(adds);
    }
  });

  it('reads a file without the key as GPT-2 (llama.cpp: default)', async () => {
    const metadata = await writeVocabGguf('absent', null, tokens, merges);
    const tokenizer = createTokenizerFromGguf(metadata);
    // GPT-2's regex keeps digit runs whole and contractions lower-case only.
    const pieces = tokenizer.encode('12345 WE\'LL', { addSpecialTokens: false }).map((id) => tokenizer.idToToken(id));
    expect(pieces.join('')).toBe('12345ĠWE\'LL');
    expect(pieces).toContain("'");
  });
});

describe('GGUF end-of-generation tokens', () => {
  const metadataOf = (tokens: string[], extra: Record<string, unknown> = {}) => ({ 'tokenizer.ggml.tokens': tokens, ...extra });

  it('stops at the turn-ending tokens llama.cpp finds by text, and at eot/eom ids', () => {
    expect(ggufEndOfGenerationIds(metadataOf(['a', '<|im_end|>', '<|endoftext|>', 'b']))).toEqual([1, 2]);
    expect(ggufEndOfGenerationIds(metadataOf(['<bos>', '<eos>', '<start_of_turn>', '<end_of_turn>']))).toEqual([3]);
    expect(ggufEndOfGenerationIds(metadataOf(['x', 'y', 'z'], { 'tokenizer.ggml.eot_token_id': 2, 'tokenizer.ggml.eom_token_id': 1 }))).toEqual([2, 1]);
  });

  it('in a harmony vocabulary stops at <|return|> and <|call|> but not at <|end|>, which only closes a message', () => {
    expect(ggufEndOfGenerationIds(metadataOf(['<|start|>', '<|end|>', '<|return|>', '<|call|>']))).toEqual([2, 3]);
    expect(ggufEndOfGenerationIds(metadataOf(['<|user|>', '<|end|>']))).toEqual([1]); // Phi-3's <|end|> ends the turn
  });
});
