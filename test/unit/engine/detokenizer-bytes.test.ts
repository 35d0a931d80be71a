// The incremental detokenizer's text against a plain streaming TextDecoder fed every token's
// bytes (a special token ends the stream and adds its text), over random token sequences that
// split characters, break them, repeat BOMs and mix whole multi-byte tokens in.
import { IncrementalDetokenizer } from '../../../src/engine/detokenizer/incremental-detokenizer';
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';
import type { Tokenizer } from '../../../src/model/types';

const utf8 = (s: string) => new TextEncoder().encode(s);
/** ids 0-255: one byte each; then whole and partial multi-byte tokens; then specials. */
const MULTI = [utf8('é'), utf8('😀'), utf8('\uFEFF'), utf8('\uFEFFab'), utf8(' the'), Uint8Array.of(0xf0, 0x9f), Uint8Array.of(0x98, 0x80), Uint8Array.of(0xef, 0xbb), new Uint8Array(0), utf8('日本')];
const SPECIALS = ['<s>', '</s>'];
const FIRST_SPECIAL = 256 + MULTI.length;

const tokenizer = {
  tokenBytes: (id: number) => (id < 256 ? Uint8Array.of(id) : (MULTI[id - 256] ?? new Uint8Array(0))),
  isSpecial: (id: number) => id >= FIRST_SPECIAL,
  idToToken: (id: number) => (id >= FIRST_SPECIAL ? SPECIALS[id - FIRST_SPECIAL] : String(id)),
} as unknown as Tokenizer;

function reference(ids: number[]): string {
  let decoder = new TextDecoder();
  let text = '';
  for (const id of ids) {
    if (tokenizer.isSpecial(id)) {
      text += decoder.decode() + tokenizer.idToToken(id)!;
      decoder = new TextDecoder();
    } else {
      text += decoder.decode(tokenizer.tokenBytes(id), { stream: true });
    }
  }
  return text + decoder.decode();
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

const INTERESTING = [0x41, 0x20, 0xc3, 0xa9, 0xe6, 0x97, 0xa5, 0xf0, 0x9f, 0x98, 0x80, 0xef, 0xbb, 0xbf, 0xff, 0x80];

describe('IncrementalDetokenizer bytes', () => {
  const params = normalizeSamplingParams({ skip_special_tokens: false, spaces_between_special_tokens: false });

  it('gives the streaming decoder\'s text for 3,000 random sequences', () => {
    const next = rng(7);
    for (let round = 0; round < 3000; round++) {
      const ids: number[] = [];
      const length = 1 + Math.floor(next() * 12);
      for (let i = 0; i < length; i++) {
        const r = next();
        if (r < 0.55) ids.push(INTERESTING[Math.floor(next() * INTERESTING.length)]);
        else if (r < 0.9) ids.push(256 + Math.floor(next() * MULTI.length));
        else if (r < 0.95) ids.push(FIRST_SPECIAL + Math.floor(next() * SPECIALS.length));
        else ids.push(Math.floor(next() * 256));
      }
      const detok = new IncrementalDetokenizer(tokenizer, params);
      let streamed = '';
      for (const id of ids) {
        detok.update([id], false);
        streamed += detok.getNextOutputText(false, true);
      }
      streamed += detok.getNextOutputText(true, true);
      expect([ids, streamed]).toEqual([ids, reference(ids)]);
    }
  });

  it('drops a BOM only where the stream starts', () => {
    const detok = new IncrementalDetokenizer(tokenizer, params);
    const bom = 256 + 2;
    for (const id of [bom, bom, FIRST_SPECIAL, bom, 0x41]) detok.update([id], false);
    expect(detok.getNextOutputText(true, false)).toBe('\uFEFF<s>A');
  });
});
