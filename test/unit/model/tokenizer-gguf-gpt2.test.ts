// GGUF byte-level BPE vocabularies (tokenizer.ggml.model = gpt2), on a small synthetic vocabulary.
import { createTokenizerFromGguf, ggufVocabToTokenizerJson } from '../../../src/model/tokenizer';
import { BYTE_TO_CHAR } from '../../../src/model/tokenizer/byte-level';
import type { Tokenizer } from '../../../src/model/types';
import { MIXED_LINES, mixedText } from './tokenizer-text';

const MERGES = ['Ġ t', 'h e', 'Ġt he', 'l l', 'e ll', 'H ell', 'Hell o', '1 2', "' M"];
const NORMAL = [...BYTE_TO_CHAR, 'Ġt', 'he', 'Ġthe', 'll', 'ell', 'Hell', 'Hello', '12', "'M", 'abc'];
const SPECIAL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const USER_DEFINED = ['<tool_call>'];

function metadata(pre: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const tokens = [...NORMAL, ...SPECIAL, ...USER_DEFINED];
  const types = [...NORMAL.map(() => 1), ...SPECIAL.map(() => 3), ...USER_DEFINED.map(() => 4)];
  return {
    'tokenizer.ggml.model': 'gpt2',
    'tokenizer.ggml.pre': pre,
    'tokenizer.ggml.tokens': tokens,
    'tokenizer.ggml.token_type': types,
    'tokenizer.ggml.merges': MERGES,
    'tokenizer.ggml.eos_token_id': tokens.indexOf('<|im_end|>'),
    'tokenizer.ggml.bos_token_id': tokens.indexOf('<|endoftext|>'),
    'tokenizer.ggml.padding_token_id': tokens.indexOf('<|endoftext|>'),
    'tokenizer.ggml.add_bos_token': false,
    ...extra,
  };
}

const pieces = (tokenizer: Tokenizer, text: string) =>
  tokenizer.encode(text, { addSpecialTokens: false }).map((id) => tokenizer.idToToken(id));

describe('GGUF gpt2 (byte-level BPE) vocabulary', () => {
  const qwen = createTokenizerFromGguf(metadata('qwen2'));
  const imStart = NORMAL.length + 1;
  const imEnd = NORMAL.length + 2;
  const toolCall = NORMAL.length + 3;

  it('applies merges by rank after the pre-tokenizer split', () => {
    expect(pieces(qwen, 'Hello the world')).toEqual(['Hello', 'Ġthe', 'Ġ', 'w', 'o', 'r', 'l', 'd']);
    expect(qwen.encode('Hello')).toEqual([NORMAL.indexOf('Hello')]); // no BOS: add_bos_token false
    expect([qwen.bosToken, qwen.eosToken, qwen.eosTokenId, qwen.padTokenId])
      .toEqual(['<|endoftext|>', '<|im_end|>', imEnd, NORMAL.length]);
  });

  it('picks the pre-tokenizer from tokenizer.ggml.pre', () => {
    // qwen2 splits digits one by one; Llama 3 keeps up to three; GPT-2 keeps runs.
    expect(pieces(qwen, '12345')).toEqual(['1', '2', '3', '4', '5']);
    const llama3 = createTokenizerFromGguf(metadata('llama-bpe'));
    expect(pieces(llama3, '12345')).toEqual(['12', '3', '4', '5']);
    const gpt2 = createTokenizerFromGguf(metadata('gpt-2'));
    expect(pieces(gpt2, '12345')).toEqual(['12', '3', '4', '5']);
    // Contractions: case-insensitive in Llama 3 / Qwen2, lower-case only in GPT-2.
    expect(pieces(llama3, "I'M")).toEqual(['I', "'M"]);
    expect(pieces(gpt2, "I'M")).toEqual(['I', "'", 'M']);
    // Llama 3 sets ignore_merges: a word that is a vocabulary entry is taken whole.
    expect(pieces(llama3, 'abc')).toEqual(['abc']);
    expect(pieces(qwen, 'abc')).toEqual(['a', 'b', 'c']);
  });

  it('round-trips arbitrary UTF-8 through decode and tokenBytes', () => {
    const text = mixedText();
    const ids = qwen.encode(text);
    expect(qwen.decode(ids)).toBe(text);
    expect(Buffer.concat(ids.map((id) => Buffer.from(qwen.tokenBytes(id)))).toString('utf8')).toBe(text);
    for (const line of MIXED_LINES) expect(qwen.decode(qwen.encode(line))).toBe(line);
    expect(Buffer.from(qwen.tokenBytes(NORMAL.indexOf('Ġthe'))).toString()).toBe(' the');
    expect(Array.from(qwen.tokenBytes(0xf0))).toEqual([0xf0]); // byte ids line up with BYTE_TO_CHAR here
  });

  it('matches special and added tokens in text and decodes them per the options', () => {
    const ids = qwen.encode('<|im_start|>user\nHi<tool_call><|im_end|>');
    expect(ids[0]).toBe(imStart);
    expect(ids.slice(-2)).toEqual([toolCall, imEnd]);
    expect(qwen.isSpecial(imStart)).toBe(true);
    expect(qwen.isSpecial(toolCall)).toBe(false);
    expect(qwen.decode(ids)).toBe('user\nHi<tool_call>');
    expect(qwen.decode(ids, { skipSpecialTokens: false })).toBe('<|im_start|> user\nHi<tool_call> <|im_end|>');
    expect(qwen.decode(ids, { skipSpecialTokens: false, spacesBetweenSpecialTokens: false }))
      .toBe('<|im_start|>user\nHi<tool_call><|im_end|>');
    expect(Buffer.from(qwen.tokenBytes(imEnd)).toString()).toBe('<|im_end|>');
    expect(Buffer.from(qwen.tokenBytes(toolCall)).toString()).toBe('<tool_call>');
  });

  it('adds BOS when the file asks for it (Llama 3)', () => {
    const llama3 = createTokenizerFromGguf(metadata('llama-bpe', { 'tokenizer.ggml.add_bos_token': true }));
    expect(llama3.encode('Hello')).toEqual([NORMAL.length, NORMAL.indexOf('Hello')]);
    expect(llama3.encode('Hello', { addSpecialTokens: false })).toEqual([NORMAL.indexOf('Hello')]);
  });

  it('carries the chat template and rejects unknown vocabularies', () => {
    const { tokenizerConfig } = ggufVocabToTokenizerJson(metadata('qwen2', { 'tokenizer.chat_template': '{{ x }}' }));
    expect(tokenizerConfig).toMatchObject({ chat_template: '{{ x }}', eos_token: '<|im_end|>', add_bos_token: false });
    expect(() => createTokenizerFromGguf({ ...metadata('qwen2'), 'tokenizer.ggml.model': 'bert' }))
      .toThrow(/unsupported GGUF tokenizer model 'bert'/);
    expect(() => createTokenizerFromGguf({ 'tokenizer.ggml.model': 'gpt2' })).toThrow(/tokenizer.ggml.tokens/);
  });
});
