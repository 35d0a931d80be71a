// The tokenizer and chat-template jobs themselves, over one tokenizer and template: the same
// code answers inline on the HTTP thread (small jobs) and inside a text worker (large ones).

import { createChatTemplate } from '../../model/chat-template';
import type { ChatMessage, ChatRenderOptions, ChatTemplate, DecodeOptions, Tokenizer } from '../../model/types';
import type { RenderedChat } from '../types';

/** Per-request templates used on their own (model without a template), parsed once each. */
const MAX_CACHED_REQUEST_TEMPLATES = 16;

export class TextJobs {
  private readonly requestTemplates = new Map<string, ChatTemplate>();

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly template: ChatTemplate | null,
  ) {}

  encode(texts: readonly string[], addSpecialTokens: boolean): number[][] {
    return texts.map((text) => this.tokenizer.encode(text, { addSpecialTokens }));
  }

  decode(ids: readonly number[], opts?: DecodeOptions): string {
    return this.tokenizer.decode(ids, opts);
  }

  renderChat(conversations: ChatMessage[][], opts: ChatRenderOptions, encode: { addSpecialTokens: boolean } | null): RenderedChat[] {
    const template = this.templateFor(opts.template ?? null);
    return conversations.map((messages) => {
      const text = template.render(messages, opts);
      return { text, tokenIds: encode ? this.tokenizer.encode(text, encode) : null };
    });
  }

  /** The model's template; a per-request template alone when the model has none (callers check one exists). */
  private templateFor(requestTemplate: string | null): ChatTemplate {
    if (this.template) return this.template;
    if (requestTemplate === null) throw new Error('no chat template');
    let template = this.requestTemplates.get(requestTemplate);
    if (!template) {
      template = createChatTemplate(requestTemplate, { bos_token: this.tokenizer.bosToken, eos_token: this.tokenizer.eosToken });
      if (this.requestTemplates.size >= MAX_CACHED_REQUEST_TEMPLATES) this.requestTemplates.clear();
      this.requestTemplates.set(requestTemplate, template);
    }
    return template;
  }
}

/** A job as it travels to a text worker. */
export type TextJob =
  | { op: 'encode'; texts: readonly string[]; addSpecialTokens: boolean }
  | { op: 'decode'; ids: readonly number[]; opts?: DecodeOptions }
  | { op: 'render'; conversations: ChatMessage[][]; opts: ChatRenderOptions; encode: { addSpecialTokens: boolean } | null };

export function runTextJob(jobs: TextJobs, job: TextJob): unknown {
  switch (job.op) {
    case 'encode':
      return jobs.encode(job.texts, job.addSpecialTokens);
    case 'decode':
      return jobs.decode(job.ids, job.opts);
    case 'render':
      return jobs.renderChat(job.conversations, job.opts, job.encode);
  }
}

/**
 * Token ids leave a worker as Int32Arrays whose buffers are transferred (no copy); a number[]
 * of millions of ids would cost the receiving thread a long structured-clone pause instead.
 */
export function packTokenIds(result: unknown, op: TextJob['op']): { result: unknown; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const pack = (ids: number[]): Int32Array => {
    const typed = Int32Array.from(ids);
    transfer.push(typed.buffer);
    return typed;
  };
  if (op === 'encode') return { result: (result as number[][]).map(pack), transfer };
  if (op === 'render') {
    const rendered = (result as RenderedChat[]).map((r) => ({ text: r.text, tokenIds: r.tokenIds ? pack(r.tokenIds) : null }));
    return { result: rendered, transfer };
  }
  return { result, transfer };
}

/** Worker ↔ pool messages. */
export type TextWorkerRequest = { id: number; job: TextJob };
export type TextWorkerReply =
  | { type: 'ready' }
  | { type: 'startup-error'; error: string }
  | { type: 'done'; id: number; result: unknown }
  | { type: 'failed'; id: number; name: string; message: string };
