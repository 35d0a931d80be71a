// Incremental detokenizer of one sequence (vLLM v1 `IncrementalDetokenizer`), built on
// Tokenizer.tokenBytes: token bytes go through a streaming UTF-8 decoder, so a character
// split over byte-fallback tokens (emoji: <0xF0><0x9F><0x98><0x80>) appears only once
// complete. The first generated token keeps its leading space ('▁Once' → ' Once'): the
// text continues the prompt, it does not start a new one.
//
// Stop strings are searched on the text; a match cuts the text (unless
// include_stop_str_in_output). While running, getNextOutputText holds back
// max(len(stop)) - 1 characters, so a stop string that is still forming is never streamed.

import type { Tokenizer } from '../../model/types';
import type { SamplingParams } from '../types';
import { stopHoldBackLength } from '../sampling-params';
import { findStopString, safeCut } from './stop-strings';

export class IncrementalDetokenizer {
  /** BOM handling is done here (atStreamStart), as the decoder would, since whole tokens skip it. */
  private readonly decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  /** Whether the decoder may hold the first bytes of an unfinished character. */
  private pending = false;
  /** No character decoded since the start or the last flush: a leading U+FEFF is a BOM and dropped. */
  private atStreamStart = true;
  private text = '';
  private numTokens = 0;
  private lastOffset = 0;
  /** Whether the last piece written was a (kept) special token, for spaces_between_special_tokens. */
  private lastWasSpecial: boolean;
  private readonly holdBack: number;
  /** The prompt is text before the output (a leading special token is spaced from it). */
  private readonly hasPrompt: boolean;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly params: SamplingParams,
    promptTokenIds: readonly number[] = [],
  ) {
    this.holdBack = stopHoldBackLength(params);
    this.hasPrompt = promptTokenIds.length > 0;
    const lastPrompt = promptTokenIds.length > 0 ? promptTokenIds[promptTokenIds.length - 1] : null;
    this.lastWasSpecial = lastPrompt != null && !params.skip_special_tokens && tokenizer.isSpecial(lastPrompt);
  }

  /** Detokenized output so far (after any stop-string cut). */
  get outputText(): string {
    return this.text;
  }

  /**
   * Adds new output tokens. `stopTerminated`: the last token ended the sequence (EOS or a
   * stop token id); its text is left out unless include_stop_str_in_output (vLLM v1).
   * Returns the stop string that matched (the text is already cut), else null.
   */
  update(newTokenIds: readonly number[], stopTerminated: boolean): string | null {
    if (newTokenIds.length === 0) return null;
    let ids = newTokenIds;
    let skipped = 0;
    if (stopTerminated && !this.params.include_stop_str_in_output) {
      ids = newTokenIds.slice(0, -1);
      skipped = 1;
    }
    const minTokens = this.params.min_tokens;
    let stopCheckOffset = this.text.length;
    for (const id of ids) {
      this.numTokens++;
      this.text += this.decodeNext(id);
      // Text produced while still below min_tokens may not end the sequence (vLLM #22014).
      if (minTokens > 0 && this.numTokens <= minTokens) stopCheckOffset = this.text.length;
    }
    this.numTokens += skipped;

    if (this.params.stop.length === 0 || this.numTokens <= minTokens) return null;
    const match = findStopString(
      this.text,
      this.text.length - stopCheckOffset,
      this.params.stop,
      this.params.include_stop_str_in_output,
    );
    if (!match) return null;
    if (match.truncateTo !== -1) this.text = this.text.slice(0, match.truncateTo);
    return match.stop;
  }

  /**
   * Text for the next RequestOutput (vLLM `get_next_output_text`): the delta since the last
   * call, or everything; while not finished the stop-string hold-back is kept back.
   */
  getNextOutputText(finished: boolean, delta: boolean): string {
    if (finished) this.flush();
    const keep = finished ? 0 : this.holdBack;
    const length = safeCut(this.text, Math.max(0, this.text.length - keep));
    if (!delta) return this.text.slice(0, length);
    const from = this.lastOffset;
    if (from >= length) return '';
    this.lastOffset = length;
    return this.text.slice(from, length);
  }

  /** Ends the byte stream: an unfinished UTF-8 sequence becomes U+FFFD (as HF decode does). */
  private flush(): void {
    const rest = this.endStream();
    if (rest) this.text += rest;
  }

  /** What the decoder still holds (an unfinished character becomes U+FFFD); the next bytes start a new stream. */
  private endStream(): string {
    const rest = this.pending ? this.afterBom(this.decoder.decode()) : '';
    this.pending = false;
    this.atStreamStart = true;
    return rest;
  }

  /**
   * A token's text (vLLM decodes a window of tokens through the tokenizer instead). A token
   * whose bytes are whole UTF-8 characters, met with nothing held back, is its cached string:
   * the streaming decoder would give the same, without its call per token
   * (docs/perf/engine-overhead.md).
   */
  private decodeBytes(id: number): string {
    const whole = wholeTokenText(this.tokenizer, id);
    if (whole !== null && !this.pending) return this.afterBom(whole);
    const piece = this.decoder.decode(this.tokenizer.tokenBytes(id), { stream: true });
    // After whole characters nothing is held back: their first byte ended any unfinished one
    // (a token of no bytes changes nothing).
    if (whole === null) this.pending = true;
    else if (whole.length > 0) this.pending = false;
    return this.afterBom(piece);
  }

  private afterBom(piece: string): string {
    if (!this.atStreamStart || piece.length === 0) return piece;
    this.atStreamStart = false;
    return piece.charCodeAt(0) === 0xfeff ? piece.slice(1) : piece;
  }

  private decodeNext(id: number): string {
    const tok = this.tokenizer;
    if (tok.isSpecial(id)) {
      if (this.params.skip_special_tokens) return '';
      const pending = this.endStream(); // a special token ends any half character
      const piece = tok.idToToken(id) ?? '';
      const before = this.text + pending;
      const space =
        this.params.spaces_between_special_tokens && (before.length > 0 || this.hasPrompt) && !endsWithSpace(before) ? ' ' : '';
      this.lastWasSpecial = true;
      return pending + space + piece;
    }
    const piece = this.decodeBytes(id);
    if (this.lastWasSpecial && piece.length > 0) {
      this.lastWasSpecial = false;
      const space = this.params.spaces_between_special_tokens && !/^\s/.test(piece) ? ' ' : '';
      return space + piece;
    }
    return piece;
  }
}

const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Per tokenizer, per id: the token's text when its bytes are whole valid UTF-8 characters, else null. */
const wholeTexts = new WeakMap<Tokenizer, Map<number, string | null>>();

function wholeTokenText(tokenizer: Tokenizer, id: number): string | null {
  let texts = wholeTexts.get(tokenizer);
  if (texts === undefined) wholeTexts.set(tokenizer, (texts = new Map<number, string | null>()));
  let text = texts.get(id);
  if (text === undefined) {
    try {
      text = strictDecoder.decode(tokenizer.tokenBytes(id));
    } catch {
      text = null;
    }
    texts.set(id, text);
  }
  return text;
}

function endsWithSpace(s: string): boolean {
  return s.length > 0 && /\s$/.test(s);
}
