// Watches a completion's output, token by token, for a piece of text (the end of a reasoning
// section, after which structured outputs start). Only a tail as long as the text is kept.

import type { Tokenizer } from '../../model/types';

export class TextWatch {
  private readonly decoder = new TextDecoder('utf-8');
  private tail = '';

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly text: string,
  ) {}

  /** Adds a token's text; true once the watched text has appeared. */
  push(tokenId: number): boolean {
    this.tail += this.decoder.decode(this.tokenizer.tokenBytes(tokenId), { stream: true });
    if (this.tail.includes(this.text)) return true;
    const keep = this.text.length - 1; // a tail that may be the start of the text
    this.tail = keep > 0 ? this.tail.slice(-keep) : '';
    return false;
  }
}
