// The GGUF SentencePiece vocabulary of stories260K, through the tokenizer.json route.
import { gguf } from '@huggingface/gguf';
import { createTokenizerFromGguf, createTokenizerFromHfFiles, ggufVocabToTokenizerJson } from '../../../src/model/tokenizer';
import type { Tokenizer } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { SentencePieceReference } from './tokenizer-spm-reference';
import { MIXED_LINES, mixedText } from './tokenizer-text';

const path = sharedModel('stories260K.gguf');

function concatBytes(tokenizer: Tokenizer, ids: number[]): Buffer {
  return Buffer.concat(ids.map((id) => Buffer.from(tokenizer.tokenBytes(id))));
}

needs(path).describe('GGUF llama (SentencePiece) vocabulary: stories260K', () => {
  let metadata: Record<string, unknown>;
  let tokenizer: Tokenizer;

  beforeAll(async () => {
    metadata = (await gguf(path, { allowLocalFile: true })).metadata as Record<string, unknown>;
    tokenizer = createTokenizerFromGguf(metadata);
  });

  it('encodes with BOS as llama.cpp and Hugging Face do', () => {
    expect(tokenizer.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(tokenizer.encode('Once upon a time', { addSpecialTokens: false })).toEqual([403, 407, 261, 378]);
    expect(tokenizer.vocabSize).toBe(512);
    expect([tokenizer.bosTokenId, tokenizer.eosTokenId, tokenizer.padTokenId]).toEqual([1, 2, null]);
    expect([tokenizer.bosToken, tokenizer.eosToken]).toEqual(['<s>', '</s>']);
  });

  it('falls back to byte tokens for text outside the vocabulary', () => {
    const ids = tokenizer.encode('🙂', { addSpecialTokens: false });
    expect(ids.map((id) => tokenizer.idToToken(id))).toEqual(['▁', '<0xF0>', '<0x9F>', '<0x99>', '<0x82>']);
    expect(Array.from(tokenizer.tokenBytes(ids[1]))).toEqual([0xf0]);
    expect(tokenizer.decode(ids)).toBe('🙂');
    expect(tokenizer.encode('a\nb', { addSpecialTokens: false }).map((id) => tokenizer.idToToken(id)))
      .toContain('<0x0A>');
  });

  it('round-trips mixed UTF-8 text through decode and through tokenBytes', () => {
    const text = mixedText();
    const ids = tokenizer.encode(text);
    expect(ids[0]).toBe(1);
    expect(tokenizer.decode(ids)).toBe(text);
    // tokenBytes gives the mid-sequence bytes: the SentencePiece prefix space is still there.
    expect(concatBytes(tokenizer, ids.slice(1)).toString('utf8')).toBe(' ' + text);
    for (const line of MIXED_LINES) expect(tokenizer.decode(tokenizer.encode(line))).toBe(line);
  });

  it('agrees with an independent llama.cpp-style SentencePiece encoder', () => {
    const reference = new SentencePieceReference(
      metadata['tokenizer.ggml.tokens'] as string[], metadata['tokenizer.ggml.scores'] as number[]);
    for (const line of [...MIXED_LINES, mixedText().slice(0, 1500)]) {
      expect(tokenizer.encode(line, { addSpecialTokens: false })).toEqual(reference.encode(line));
    }
  });

  it('builds a tokenizer.json that loads like a Hugging Face directory with the same ids', () => {
    const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(metadata);
    const json = JSON.parse(JSON.stringify(tokenizerJson));
    const config = JSON.parse(JSON.stringify(tokenizerConfig));
    expect(config).toMatchObject({ tokenizer_class: 'LlamaTokenizer', bos_token: '<s>', eos_token: '</s>',
      unk_token: '<unk>', add_bos_token: true, add_eos_token: false });
    expect(json.model).toMatchObject({ type: 'BPE', byte_fallback: true, unk_token: '<unk>' });
    expect(json.model.merges.length).toBeGreaterThan(100);
    expect(json.added_tokens.map((t: { content: string }) => t.content)).toEqual(['<unk>', '<s>', '</s>']);
    const fromFiles = createTokenizerFromHfFiles(json, config);
    const text = mixedText();
    expect(fromFiles.encode(text)).toEqual(tokenizer.encode(text));
    // Without a tokenizer_config there is no BOS/EOS naming, but the post-processor still adds <s>.
    const bare = createTokenizerFromHfFiles(json, null);
    expect(bare.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(bare.bosTokenId).toBeNull();
  });

  it('decodes special tokens: skipped by default, kept with or without spaces', () => {
    const ids = [...tokenizer.encode('Once upon a time'), 2];
    expect(tokenizer.decode(ids)).toBe('Once upon a time');
    expect(tokenizer.decode(ids, { skipSpecialTokens: false })).toBe('<s> Once upon a time </s>');
    expect(tokenizer.decode(ids, { skipSpecialTokens: false, spacesBetweenSpecialTokens: false }))
      .toBe('<s>Once upon a time</s>');
    expect(tokenizer.isSpecial(1)).toBe(true);
    expect(tokenizer.isSpecial(0)).toBe(true); // <unk>
    expect(tokenizer.isSpecial(403)).toBe(false);
    expect(tokenizer.decode([])).toBe('');
  });

  it('strips the SentencePiece space only at the start of a decoded sequence', () => {
    const ids = tokenizer.encode('Once upon a time', { addSpecialTokens: false });
    expect(tokenizer.decode(ids.slice(1))).toBe('upon a time');
    expect(Buffer.from(tokenizer.tokenBytes(ids[1])).toString()).toBe(' upon');
    expect(tokenizer.idToToken(ids[1])).toBe('▁upon');
    expect(tokenizer.idToToken(512)).toBeUndefined();
    expect(tokenizer.idToToken(-1)).toBeUndefined();
    expect(Buffer.from(tokenizer.tokenBytes(2)).toString()).toBe('</s>');
    // Ids past the vocabulary (padded embedding rows) contribute nothing, in decode and tokenBytes.
    expect(tokenizer.tokenBytes(512)).toHaveLength(0);
    expect(tokenizer.decode([403, 512, 407])).toBe('Once upon');
  });

  it('reads typed metadata ({value, type} entries) as well as plain values', async () => {
    const { typedMetadata } = await gguf(path, { allowLocalFile: true, typedMetadata: true });
    const typed = createTokenizerFromGguf(typedMetadata);
    expect(typed.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(typed.eosTokenId).toBe(2);
  });

  it('matches special tokens written in the text', () => {
    expect(tokenizer.encode('<s>Once</s>', { addSpecialTokens: false })).toEqual([1, 403, 2]);
  });
});
