// Reasoning between <think> and </think>, as DeepSeek-R1 and Qwen3 write it. The opening tag is
// optional (their templates often put it in the prompt): output before </think> is reasoning,
// output after it is content. Tags are matched in the text, so they work whether or not the
// tokenizer has them as single tokens; a tail that may be the start of a tag is held back.

import { partialTagOverlap } from '../tool-parsers/json-scan';
import type { ReasoningDelta, ReasoningParser, ReasoningParserContext, ReasoningSplit } from './types';

type Phase = 'opening' | 'reasoning' | 'content';

export class ThinkTagReasoningParser implements ReasoningParser {
  protected readonly startTag: string = '<think>';
  protected readonly endTag: string = '</think>';
  private text = '';
  private consumed = 0;
  private phase: Phase = 'opening';

  constructor(protected readonly context: ReasoningParserContext) {}

  get reasoningEndMarker(): string {
    return this.endTag;
  }

  /** Where output without any tag belongs: reasoning (the model thinks first) or content. */
  protected startsInReasoning(): boolean {
    return true;
  }

  isReasoningEnd(promptText: string): boolean {
    const end = promptText.lastIndexOf(this.endTag);
    return end >= 0 && end > promptText.lastIndexOf(this.startTag);
  }

  /** Index just past a leading start tag (after whitespace), or 0 when the text does not open with one. */
  private openingLength(text: string): number {
    const lead = text.length - text.trimStart().length;
    return text.startsWith(this.startTag, lead) ? lead + this.startTag.length : 0;
  }

  extract(text: string): ReasoningSplit {
    const opening = this.openingLength(text);
    if (opening === 0 && !this.startsInReasoning()) return { reasoning: null, content: text || null };
    const body = text.slice(opening);
    const end = body.indexOf(this.endTag);
    if (end < 0) return { reasoning: body || null, content: null };
    return { reasoning: body.slice(0, end) || null, content: body.slice(end + this.endTag.length) || null };
  }

  extractDelta(delta: string, finished: boolean): ReasoningDelta | null {
    this.text += delta;
    const out: ReasoningDelta = {};
    if (this.phase === 'opening') {
      const rest = this.text.trimStart();
      // Wait while the output may still turn into the opening tag.
      if (!finished && rest.length < this.startTag.length && this.startTag.startsWith(rest)) return null;
      const opening = this.openingLength(this.text);
      this.consumed = opening;
      this.phase = opening > 0 || this.startsInReasoning() ? 'reasoning' : 'content';
    }
    if (this.phase === 'reasoning') {
      const rest = this.text.slice(this.consumed);
      const end = rest.indexOf(this.endTag);
      if (end >= 0) {
        if (end > 0) out.reasoning = rest.slice(0, end);
        this.consumed += end + this.endTag.length;
        this.phase = 'content';
      } else {
        const sendable = rest.length - (finished ? 0 : partialTagOverlap(rest, this.endTag));
        if (sendable > 0) out.reasoning = rest.slice(0, sendable);
        this.consumed += sendable;
      }
    }
    if (this.phase === 'content' && this.text.length > this.consumed) {
      out.content = this.text.slice(this.consumed);
      this.consumed = this.text.length;
    }
    return out.reasoning !== undefined || out.content !== undefined ? out : null;
  }
}

/** `deepseek_r1`: DeepSeek-R1 and its distills; output is reasoning until </think>. */
export class DeepSeekR1ReasoningParser extends ThinkTagReasoningParser {}

/**
 * `qwen3`: Qwen3 / QwQ. With `enable_thinking: false` (chat_template_kwargs, or reasoning_effort
 * "none") output without tags is content; otherwise it is reasoning until </think>.
 */
export class Qwen3ReasoningParser extends ThinkTagReasoningParser {
  protected startsInReasoning(): boolean {
    return this.context.chatTemplateKwargs.enable_thinking !== false;
  }
}
