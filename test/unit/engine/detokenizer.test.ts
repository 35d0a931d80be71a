// Incremental detokenizer + stop handling on stories260K's real SentencePiece vocabulary
// (byte-fallback tokens, '▁' spaces, <s>/</s> specials).
import { gguf } from '@huggingface/gguf';
import { SequenceOutputProcessor, findStopString, safeCut } from '../../../src/engine/detokenizer';
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';
import type { SamplingParams } from '../../../src/engine/types';
import { createTokenizerFromGguf } from '../../../src/model/tokenizer';
import type { Tokenizer } from '../../../src/model/types';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

const path = sharedModel('stories260K.gguf');
const EOS = 2;

needs(path).describe('SequenceOutputProcessor on stories260K', () => {
  let tok: Tokenizer;
  beforeAll(async () => {
    tok = createTokenizerFromGguf((await gguf(path, { allowLocalFile: true })).metadata as Record<string, unknown>);
  });

  const encode = (text: string) => tok.encode(text, { addSpecialTokens: false });

  function processor(partial: Partial<SamplingParams>, opts: { maxTokens?: number; maxModelLen?: number; eos?: number[] } = {}) {
    return new SequenceOutputProcessor({
      params: normalizeSamplingParams(partial),
      tokenizer: tok,
      promptTokenIds: [1, ...encode('Hi')],
      eosTokenIds: opts.eos ?? [EOS],
      maxTokens: opts.maxTokens ?? 100,
      maxModelLen: opts.maxModelLen ?? 1000,
    });
  }

  /** Feeds tokens one at a time, collecting each step's delta, until the sequence finishes. */
  function stream(out: SequenceOutputProcessor, ids: number[]) {
    const deltas: string[] = [];
    for (const id of ids) {
      const status = out.appendToken(id);
      deltas.push(out.nextText(true));
      if (status) break;
    }
    if (!out.finished) {
      out.finish('length');
      deltas.push(out.nextText(true));
    }
    return { deltas, text: deltas.join(''), status: out.finishStatus! };
  }

  it('streams text that keeps the first token\'s leading space', () => {
    const ids = encode('Once upon a time, there was a little girl.');
    const { deltas, text } = stream(processor({}), ids);
    expect(text).toBe(' Once upon a time, there was a little girl.');
    expect(deltas[0]).toBe(' Once');
  });

  it('never emits half of a UTF-8 character split over byte-fallback tokens', () => {
    const ids = encode('é😀 ok');
    expect(ids.map((i) => tok.idToToken(i))).toContain('<0xF0>');
    const { deltas, text } = stream(processor({}), ids);
    expect(text).toBe(' é😀 ok');
    for (const d of deltas) expect(d).not.toContain('\uFFFD');
    const emojiStep = deltas.findIndex((d) => d.includes('😀'));
    expect(deltas.slice(emojiStep - 3, emojiStep)).toEqual(['', '', '']); // first three bytes held
  });

  it('an unfinished UTF-8 sequence becomes U+FFFD only at the end', () => {
    const ids = [...encode('ok'), 0xf0 + 3, 0x9f + 3];
    const { deltas, text } = stream(processor({}), ids);
    expect(deltas.slice(0, -1).join('')).toBe(' ok');
    expect(text).toBe(' ok\uFFFD');
  });

  it('cuts a stop string spread over several tokens and never streams part of it', () => {
    const ids = encode('Hello world STOP here');
    const out = processor({ stop: ['STOP'] });
    const { deltas, text, status } = stream(out, ids);
    expect(status).toEqual({ finishReason: 'stop', stopReason: 'STOP' });
    expect(text).toBe(' Hello world ');
    let streamed = '';
    for (const d of deltas) {
      streamed += d;
      expect(' Hello world '.startsWith(streamed)).toBe(true);
    }
    expect(out.tokenIds).toEqual(ids.slice(0, ids.indexOf(encode('STOP').at(-1)!) + 1)); // token ids keep every token
  });

  it('include_stop_str_in_output keeps the stop string', () => {
    const { text, status } = stream(processor({ stop: ['STOP'], include_stop_str_in_output: true }), encode('Hello world STOP here'));
    expect(status.stopReason).toBe('STOP');
    expect(text).toBe(' Hello world STOP');
  });

  it('cuts a stop string that ends inside a token', () => {
    const { text, status } = stream(processor({ stop: ['im'] }), encode('Once upon a time, there'));
    expect(status).toEqual({ finishReason: 'stop', stopReason: 'im' });
    expect(text).toBe(' Once upon a t');
  });

  it('the first stop string in the request order wins', () => {
    const { status, text } = stream(processor({ stop: ['time', 'upon'] }), encode('Once upon a time'));
    // 'upon' completes first (earlier token) so it ends the sequence.
    expect(status.stopReason).toBe('upon');
    expect(text).toBe(' Once ');
    const both = stream(processor({ stop: ['a ti', 'ti'] }), encode('Once upon a time'));
    expect(both.status.stopReason).toBe('a ti');
  });

  it('holds back max(len(stop))-1 characters while running and flushes them at the end', () => {
    const out = processor({ stop: ['xyz!'] });
    const ids = encode('Once upon a time');
    for (const id of ids) out.appendToken(id);
    expect(out.nextText(false)).toBe(' Once upon a t');
    expect(out.nextText(true)).toBe(' Once upon a t');
    out.finish('length');
    expect(out.nextText(true)).toBe('ime');
    expect(out.nextText(false)).toBe(' Once upon a time');
  });

  it('releases a held-back partial match once it cannot complete', () => {
    const { deltas, text, status } = stream(processor({ stop: ['STOP!'] }), encode('Hello world STOP here'));
    expect(status.finishReason).toBe('length');
    expect(text).toBe(' Hello world STOP here');
    expect(deltas.slice(0, -1).join('')).toBe(' Hello world STOP '); // 4 chars held until the end
  });

  it('a stop token id ends with stop_reason = the id and its text left out', () => {
    const ids = encode('Once upon a time');
    const upon = ids[1];
    const { text, status } = stream(processor({ stop_token_ids: [upon] }), ids);
    expect(status).toEqual({ finishReason: 'stop', stopReason: upon });
    expect(text).toBe(' Once');
    const kept = stream(processor({ stop_token_ids: [upon], include_stop_str_in_output: true }), ids);
    expect(kept.text).toBe(' Once upon');
  });

  it('EOS ends with stop_reason null; ignore_eos keeps going', () => {
    const ids = [...encode('Once'), EOS, ...encode('upon')];
    const eos = stream(processor({}), ids);
    expect(eos.status).toEqual({ finishReason: 'stop', stopReason: null });
    expect(eos.text).toBe(' Once');
    const ignored = stream(processor({ ignore_eos: true }), ids);
    expect(ignored.status.finishReason).toBe('length');
    expect(ignored.text).toBe(' Once upon');
  });

  it('extra EOS ids (generation_config) stop with stop_reason = id unless ignore_eos', () => {
    const ids = [...encode('Once'), 5, ...encode('upon')];
    expect(stream(processor({}, { eos: [EOS, 5] }), ids).status).toEqual({ finishReason: 'stop', stopReason: 5 });
    expect(stream(processor({ ignore_eos: true }, { eos: [EOS, 5] }), ids).status.finishReason).toBe('length');
  });

  it('skip_special_tokens=false writes special tokens, spaced unless spaces_between_special_tokens=false', () => {
    const ids = [...encode('Once'), EOS, ...encode('upon'), 1];
    expect(stream(processor({ ignore_eos: true, skip_special_tokens: false }), ids).text).toBe(' Once </s> upon <s>');
    expect(
      stream(processor({ ignore_eos: true, skip_special_tokens: false, spaces_between_special_tokens: false }), ids).text,
    ).toBe(' Once</s> upon<s>');
    expect(stream(processor({ ignore_eos: true }), ids).text).toBe(' Once upon');
  });

  it('max_tokens and the context limit end with length', () => {
    const ids = encode('Once upon a time, there was a little girl.');
    const capped = processor({}, { maxTokens: 3 });
    expect(stream(capped, ids).status).toEqual({ finishReason: 'length', stopReason: null });
    expect(capped.tokenIds).toHaveLength(3);
    const ctx = processor({}, { maxModelLen: 5 }); // prompt is 3 tokens
    stream(ctx, ids);
    expect(ctx.tokenIds).toHaveLength(2);
  });

  it('min_tokens: EOS, stop ids and stop strings do not end the sequence before it', () => {
    const ids = [...encode('Once STOP'), EOS, ...encode('upon STOP')];
    const out = processor({ min_tokens: 7, stop: ['STOP'] }); // ▁Once ▁S T O P </s> ▁upon | ▁S T O P
    const { status, text } = stream(out, ids);
    expect(status.stopReason).toBe('STOP');
    expect(text).toBe(' Once STOP upon ');
  });

  it('repetition_detection ends with finish_reason repetition', () => {
    const phrase = encode('a little girl');
    const ids = [...encode('Once'), ...phrase, ...phrase, ...phrase, ...encode('upon')];
    const out = processor({ repetition_detection: { max_pattern_size: 6, min_pattern_size: 2, min_count: 3 } });
    const { status } = stream(out, ids);
    expect(status).toEqual({ finishReason: 'repetition', stopReason: 'repetition_detected' });
    expect(out.tokenIds).toHaveLength(1 + phrase.length * 3);
    expect(stream(processor({}), ids).status.finishReason).toBe('length');
  });

  it('cumulative text (nextText(false)) is the whole text every time', () => {
    const out = processor({});
    const ids = encode('Once upon');
    out.appendToken(ids[0]);
    expect(out.nextText(false)).toBe(' Once');
    out.appendToken(ids[1]);
    expect(out.nextText(false)).toBe(' Once upon');
  });

  it('detokenize=false or no tokenizer: no text, token stops still work', () => {
    const ids = [...encode('Once'), EOS];
    const noText = processor({ detokenize: false });
    expect(stream(noText, ids)).toMatchObject({ text: '', status: { finishReason: 'stop', stopReason: null } });
    const noTok = new SequenceOutputProcessor({
      params: normalizeSamplingParams({}),
      tokenizer: null,
      promptTokenIds: [1],
      eosTokenIds: [EOS],
      maxTokens: 10,
      maxModelLen: 100,
    });
    expect(stream(noTok, ids).status.finishReason).toBe('stop');
  });

  it('abort flushes the held-back text with finish_reason abort', () => {
    const out = processor({ stop: ['zzzz'] });
    for (const id of encode('Once upon')) out.appendToken(id);
    expect(out.nextText(true)).toBe(' Once u');
    expect(out.finish('abort')).toEqual({ finishReason: 'abort', stopReason: null });
    expect(out.nextText(true)).toBe('pon');
    expect(() => out.appendToken(5)).toThrow();
  });
});

describe('stop string helpers', () => {
  it('findStopString searches only where a match can touch the new characters', () => {
    expect(findStopString('abcSTOPdef', 3, ['STOP'], false)).toBeNull(); // match is older than the new text
    expect(findStopString('abcSTOPd', 2, ['STOP'], false)).toEqual({ stop: 'STOP', truncateTo: 3 });
    expect(findStopString('abcSTOP', 1, ['STOP'], true)).toEqual({ stop: 'STOP', truncateTo: -1 });
    expect(findStopString('abcSTOPd', 2, ['STOP'], true)).toEqual({ stop: 'STOP', truncateTo: 7 });
  });

  it('safeCut never splits a surrogate pair', () => {
    const s = 'a😀';
    expect(safeCut(s, 2)).toBe(1);
    expect(safeCut(s, 3)).toBe(3);
    expect(safeCut(s, 1)).toBe(1);
  });
});
