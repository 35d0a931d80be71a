// tokenizer.json + tokenizer_config.json handling, and the dummy model's built-in tokenizer.
import { createBuiltinTokenizer, createTokenizerFromHfFiles, builtinTokenizerFiles } from '../../../src/model/tokenizer';
import { mixedText } from './tokenizer-text';

/** A tiny SentencePiece-style tokenizer.json whose post-processor adds <s> ... </s>. */
function llamaStyleJson(): Record<string, unknown> {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  for (const piece of ['▁', 'h', 'i', '▁h', '▁hi']) vocab[piece] = Object.keys(vocab).length;
  const special = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return {
    added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] }, '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } },
    },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', unk_token: '<unk>', byte_fallback: true, fuse_unk: true, vocab, merges: ['▁ h', 'h i', '▁h i'] },
  };
}

describe('createTokenizerFromHfFiles', () => {
  it('uses the post-processor when the config has no BOS/EOS flags', () => {
    const tokenizer = createTokenizerFromHfFiles(llamaStyleJson(), { bos_token: '<s>', eos_token: '</s>' });
    expect(tokenizer.encode('hi')).toEqual([1, 263, 2]);
    expect(tokenizer.encode('hi', { addSpecialTokens: false })).toEqual([263]);
  });

  it("lets a Llama tokenizer's add_bos_token/add_eos_token decide, as transformers does", () => {
    const config = { tokenizer_class: 'LlamaTokenizerFast', bos_token: '<s>', eos_token: '</s>', add_bos_token: false, add_eos_token: true };
    const tokenizer = createTokenizerFromHfFiles(llamaStyleJson(), config);
    expect(tokenizer.encode('hi')).toEqual([263, 2]);
    const withAddedTokenDicts = createTokenizerFromHfFiles(llamaStyleJson(), {
      tokenizer_class: 'LlamaTokenizer', add_bos_token: true,
      bos_token: { content: '<s>', lstrip: false, __type: 'AddedToken' }, eos_token: { content: '</s>' },
    });
    expect(withAddedTokenDicts.encode('hi hi')).toEqual([1, 263, 263]);
    expect(withAddedTokenDicts.bosToken).toBe('<s>');
    expect(withAddedTokenDicts.eosTokenId).toBe(2);
  });

  it('applies clean_up_tokenization_spaces only when the config asks for it', () => {
    const json = llamaStyleJson();
    const ids = createTokenizerFromHfFiles(json, null).encode('hi .', { addSpecialTokens: false });
    expect(createTokenizerFromHfFiles(json, null).decode(ids)).toBe('hi .');
    expect(createTokenizerFromHfFiles(json, { clean_up_tokenization_spaces: true }).decode(ids)).toBe('hi.');
  });

  it('rejects what is not a JSON object', () => {
    expect(() => createTokenizerFromHfFiles([], null)).toThrow(/tokenizer.json must be a JSON object/);
  });
});

describe('createBuiltinTokenizer', () => {
  const tokenizer = createBuiltinTokenizer();

  it('has one token per byte plus the chat special tokens', () => {
    expect(tokenizer.vocabSize).toBe(261);
    expect(tokenizer.encode('A\n')).toEqual([65, 10]);
    expect(tokenizer.encode('é')).toEqual([0xc3, 0xa9]);
    expect(tokenizer.encode('<|im_start|>x<|im_end|>')).toEqual([259, 120, 260]);
    expect([tokenizer.bosTokenId, tokenizer.eosTokenId, tokenizer.padTokenId]).toEqual([256, 260, 258]);
    for (let id = 256; id < 261; id++) expect(tokenizer.isSpecial(id)).toBe(true);
    expect(tokenizer.isSpecial(65)).toBe(false);
  });

  it('round-trips any text, and tokenBytes gives each byte', () => {
    const text = mixedText();
    const ids = tokenizer.encode(text);
    expect(ids).toEqual(Array.from(Buffer.from(text, 'utf8')));
    expect(tokenizer.decode(ids)).toBe(text);
    for (const id of [0, 32, 127, 200, 255]) expect(Array.from(tokenizer.tokenBytes(id))).toEqual([id]);
    expect(tokenizer.idToToken(32)).toBe('Ġ');
    expect(tokenizer.decode([259, 104, 105, 260], { skipSpecialTokens: false })).toBe('<|im_start|> hi <|im_end|>');
  });

  it('exposes its files for writing a Hugging Face directory', () => {
    const { tokenizerConfig } = builtinTokenizerFiles();
    expect(tokenizerConfig).toMatchObject({ eos_token: '<|im_end|>', bos_token: '<s>' });
  });
});
