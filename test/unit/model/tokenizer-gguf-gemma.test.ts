// Gemma's GGUF vocabulary: SentencePiece BPE (tokenizer.ggml.model = llama) with byte fallback,
// no space prefix (tokenizer.ggml.add_space_prefix = false), whitespace-run pieces and the
// <start_of_turn> / <end_of_turn> control tokens. A small hand-made vocabulary, written with the
// project's GGUF writer, checked against the llama.cpp-style SentencePiece reference.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf } from '@huggingface/gguf';
import { gv, writeGguf } from '../../../src/model/gguf/writer';
import { createTokenizerFromGguf, createTokenizerFromHfFiles, ggufEndOfGenerationIds, ggufVocabToTokenizerJson } from '../../../src/model/tokenizer';
import { SentencePieceReference } from './tokenizer-spm-reference';

const CONTROL = ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>'];
const BYTES = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
const CHARS = Array.from('▁\nabcdefghijklmnopqrstuvwxyzTHW0123456789.,!?\'');
// Merged pieces, best first: each is two earlier pieces joined.
const PIECES = ['▁▁', '▁t', 'he', '▁the', '▁▁▁▁', '\n\n', 'in', 'ing', '▁a', 'er', '▁w', 'or', '▁wor', 'ld', '▁world', 'Th', '▁Th', '12', '▁1'];
const TOKENS = [...CONTROL, ...BYTES, ...CHARS, ...PIECES];
const TYPES = [...CONTROL.map((t) => (t === '<unk>' ? 2 : 3)), ...BYTES.map(() => 6), ...CHARS.map(() => 1), ...PIECES.map(() => 1)];
const SCORES = [...CONTROL.map(() => 0), ...BYTES.map(() => 0), ...CHARS.map((_, i) => -1000 - i), ...PIECES.map((_, i) => -i)];

const CORPUS = [
  'The world is in the air', '  two leading spaces and   three inside', 'tabs\tand\nnew\n\nlines\n\n\n',
  'digits 12 123 1234', 'unknown: Ω 中文 🙂', "it's THE WORLD!", 'the    four    spaces',
];

let dir: string;
let metadata: Record<string, unknown>;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ortllm-gemma-vocab-'));
  const path = join(dir, 'gemma-vocab.gguf');
  writeGguf(path, {
    'general.architecture': gv.str('gemma3'),
    'tokenizer.ggml.model': gv.str('llama'),
    'tokenizer.ggml.pre': gv.str('default'),
    'tokenizer.ggml.tokens': gv.strings(TOKENS),
    'tokenizer.ggml.scores': gv.f32s(SCORES),
    'tokenizer.ggml.token_type': gv.i32s(TYPES),
    'tokenizer.ggml.bos_token_id': gv.u32(2),
    'tokenizer.ggml.eos_token_id': gv.u32(1),
    'tokenizer.ggml.unknown_token_id': gv.u32(3),
    'tokenizer.ggml.padding_token_id': gv.u32(0),
    'tokenizer.ggml.add_bos_token': gv.bool(true),
    'tokenizer.ggml.add_space_prefix': gv.bool(false),
  }, [{ name: 'token_embd.weight', shape: [1, 32], type: 'f32', data: new Float32Array(32) }]);
  metadata = (await gguf(path, { allowLocalFile: true })).metadata as Record<string, unknown>;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('GGUF gemma (SentencePiece, no space prefix) vocabulary', () => {
  it('encodes as the llama.cpp-style SentencePiece reference, without a prefix space, with byte fallback', () => {
    const tokenizer = createTokenizerFromGguf(metadata);
    const reference = new SentencePieceReference(TOKENS, SCORES, false);
    for (const text of CORPUS) {
      const ids = tokenizer.encode(text, { addSpecialTokens: false });
      expect(ids).toEqual(reference.encode(text));
      expect(tokenizer.decode(ids)).toBe(text);
    }
    expect(tokenizer.encode('the world').map((id) => tokenizer.idToToken(id))).toEqual(['<bos>', 't', 'he', '▁world']);
    expect(tokenizer.encode('Ω', { addSpecialTokens: false }).map((id) => tokenizer.idToToken(id))).toEqual(['<0xCE>', '<0xA9>']);
  });

  it('matches the turn markers whole and treats them as special; the turn end stops generation', () => {
    const tokenizer = createTokenizerFromGguf(metadata);
    const ids = tokenizer.encode('<start_of_turn>user\nHi<end_of_turn>', { addSpecialTokens: false });
    expect([ids[0], ids[ids.length - 1]]).toEqual([TOKENS.indexOf('<start_of_turn>'), TOKENS.indexOf('<end_of_turn>')]);
    expect(tokenizer.isSpecial(ids[0])).toBe(true);
    expect(tokenizer.decode(ids)).toBe('user\nHi');
    expect(ggufEndOfGenerationIds(metadata)).toEqual([TOKENS.indexOf('<end_of_turn>')]);
  });

  it('gives the same ids as the tokenizer.json Gemma ships (Replace normalizer only, no Prepend, no Strip)', () => {
    const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(metadata);
    const json = tokenizerJson as Record<string, any>;
    expect(json.normalizer).toEqual({ type: 'Sequence', normalizers: [{ type: 'Replace', pattern: { String: ' ' }, content: '▁' }] });
    expect(json.decoder.decoders.map((d: { type: string }) => d.type)).toEqual(['Replace', 'ByteFallback', 'Fuse']);
    const shipped = { ...json, normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '▁' }, pre_tokenizer: null };
    const fromJson = createTokenizerFromHfFiles(shipped, tokenizerConfig);
    const fromGguf = createTokenizerFromGguf(metadata);
    for (const text of CORPUS) expect(fromJson.encode(text)).toEqual(fromGguf.encode(text));
  });
});
