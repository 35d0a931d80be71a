// TextWatch: the engine's watch for the end of a reasoning section in a completion's output.

import { TextWatch } from '../../../src/engine/core/text-watch';
import type { Tokenizer } from '../../../src/model/types';

describe('TextWatch', () => {
  it('sees a text spread over tokens, and split UTF-8 characters', () => {
    const bytes = (s: string) => new TextEncoder().encode(s);
    const pieces = [bytes('ab</th'), bytes('ink>'), bytes('é').slice(0, 1), bytes('é').slice(1)];
    const tokenizer = { tokenBytes: (id: number) => pieces[id] } as unknown as Tokenizer;
    const watch = new TextWatch(tokenizer, '</think>');
    expect([0, 1].map((id) => watch.push(id))).toEqual([false, true]);
    const accent = new TextWatch(tokenizer, 'é');
    expect([2, 3].map((id) => accent.push(id))).toEqual([false, true]);
  });
});
