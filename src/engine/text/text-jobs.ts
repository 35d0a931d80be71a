// The tokenizer and chat-template jobs themselves, over one tokenizer and template: the same
// code answers inline on the HTTP thread (small jobs) and inside a text worker (large ones).

import { createChatTemplate } from '../../model/chat-template';
import type { ChatMessage, ChatRenderOptions, ChatTemplate, DecodeOptions, Tokenizer } from '../../model/types';
import type { RenderedChat } from '../types';
import { encodeWithin } from './bounded-encode';

/** Per-request templates used on their own (model without a template), parsed once each. */
const MAX_CACHED_REQUEST_TEMPLATES = 16;

export class TextJobs {
  private readonly requestTemplates = new Map<string, ChatTemplate>();

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly template: ChatTemplate | null,
  ) {}

  encode(texts: readonly string[], addSpecialTokens: boolean, tokenLimit?: number | null): number[][] {
    return texts.map((text) => encodeWithin(this.tokenizer, text, addSpecialTokens, tokenLimit));
  }

  decode(ids: readonly number[], opts?: DecodeOptions): string {
    return this.tokenizer.decode(ids, opts);
  }

  renderChat(conversations: ChatMessage[][], opts: ChatRenderOptions, encode: EncodeOptions | null): RenderedChat[] {
    const template = this.templateFor(opts.template ?? null);
    return conversations.map((messages) => {
      const text = template.render(messages, opts);
      return { text, tokenIds: encode ? encodeWithin(this.tokenizer, text, encode.addSpecialTokens, encode.tokenLimit) : null };
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

/** How a rendering is tokenized; tokenLimit: see encodeWithin. */
export interface EncodeOptions {
  addSpecialTokens: boolean;
  tokenLimit?: number | null;
}

/**
 * A job. On its way to a text worker a render job's conversations travel as JSON text (see
 * toWire): a million messages would otherwise cost the HTTP thread one long structured clone.
 */
export type TextJob =
  | { op: 'encode'; texts: readonly string[]; addSpecialTokens: boolean; tokenLimit?: number | null }
  | { op: 'decode'; ids: readonly number[]; opts?: DecodeOptions }
  | { op: 'render'; conversations: ChatMessage[][] | string; opts: ChatRenderOptions; encode: EncodeOptions | null };

export function runTextJob(jobs: TextJobs, job: TextJob): unknown {
  switch (job.op) {
    case 'encode':
      return jobs.encode(job.texts, job.addSpecialTokens, job.tokenLimit);
    case 'decode':
      return jobs.decode(job.ids, job.opts);
    case 'render': {
      const conversations = typeof job.conversations === 'string' ? (JSON.parse(job.conversations) as ChatMessage[][]) : job.conversations;
      return jobs.renderChat(conversations, job.opts, job.encode);
    }
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
  | { type: 'failed'; id: number; name: string; message: string; atLeast?: number };
