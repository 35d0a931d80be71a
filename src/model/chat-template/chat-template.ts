// Chat templates on @huggingface/jinja, rendered the way transformers' apply_chat_template does
// (which is what vLLM calls): messages, tools, documents, add_generation_prompt, the tokenizer's
// special tokens and chat_template_kwargs in the context; continue_final_message cuts the text
// right after the final message's content. A model may have a `tool_use` variant, which is the
// one rendered when the request has tools.

import { Template } from '@huggingface/jinja';
import type { ChatMessage, ChatRenderOptions, ChatTemplate } from '../types';
import { ChatTemplateError } from './errors';
import { detectContentFormat, normalizeMessages } from './messages';

interface CompiledTemplate {
  template: Template;
  contentFormat: 'string' | 'openai';
}

function compile(source: string): CompiledTemplate {
  try {
    const template = new Template(source);
    return { template, contentFormat: detectContentFormat(template.parsed) };
  } catch (err) {
    throw new ChatTemplateError(`invalid chat template: ${(err as Error).message}`);
  }
}

/** The text to continue: the final message's content, or its last text part. */
function finalMessageText(messages: ChatMessage[]): string {
  const last = messages[messages.length - 1];
  if (!last) throw new ChatTemplateError('continue_final_message needs at least one message');
  const content = last.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    for (let i = content.length - 1; i >= 0; i--) {
      const text = content[i].text;
      if (typeof text === 'string') return text;
    }
  }
  throw new ChatTemplateError('continue_final_message is set but the final message has no text to continue');
}

/** Drops everything the template put after the final message (end tag, EOS, newline). */
function cutAfterFinalMessage(rendered: string, finalText: string): string {
  const stripped = finalText.trim();
  const at = rendered.lastIndexOf(stripped);
  if (at < 0) {
    throw new ChatTemplateError('continue_final_message is set but the final message does not appear in the '
      + 'chat after applying the chat template');
  }
  const lstripped = finalText.trimStart();
  // If the template kept the message's trailing whitespace, keep it; else cut after the trimmed text.
  const keepTrailing = rendered.slice(at, at + lstripped.length) === lstripped;
  return rendered.slice(0, at + (keepTrailing ? lstripped.length : stripped.length));
}

/** The template sources of a model: the default one and, when it has one, its `tool_use` variant. */
export interface ChatTemplateVariants {
  default: string | null;
  toolUse?: string | null;
}

class JinjaChatTemplate implements ChatTemplate {
  private readonly byDefault: CompiledTemplate | null;
  private readonly toolUse: CompiledTemplate | null;
  /** Per-request templates, parsed once each (clients tend to resend the same one). */
  private readonly requestTemplates = new Map<string, CompiledTemplate>();

  constructor(private readonly variants: ChatTemplateVariants, private readonly specialTokens: Record<string, unknown>) {
    this.byDefault = variants.default !== null ? compile(variants.default) : null;
    this.toolUse = variants.toolUse ? compile(variants.toolUse) : null;
  }

  sourceFor(opts: Pick<ChatRenderOptions, 'tools'>): string | null {
    return (opts.tools != null ? this.variants.toolUse : null) ?? this.variants.default;
  }

  private modelTemplate(opts: ChatRenderOptions): CompiledTemplate {
    const compiled = (opts.tools != null ? this.toolUse : null) ?? this.byDefault;
    if (!compiled) throw new ChatTemplateError('this model has only a `tool_use` chat template: send `tools` or give a chat template');
    return compiled;
  }

  render(messages: ChatMessage[], opts: ChatRenderOptions): string {
    if (opts.continueFinalMessage && opts.addGenerationPrompt) {
      throw new ChatTemplateError('continue_final_message and add_generation_prompt cannot both be true');
    }
    const compiled = opts.template ? this.requestTemplate(opts.template) : this.modelTemplate(opts);
    const contentFormat = opts.contentFormat && opts.contentFormat !== 'auto' ? opts.contentFormat : compiled.contentFormat;
    const context: Record<string, unknown> = {
      ...this.specialTokens,
      ...(opts.extraKwargs ?? {}),
      messages: normalizeMessages(messages, contentFormat, opts.imagePlaceholder ?? null),
      // Absent tools/documents are None in transformers, so `tools is not none` is false.
      tools: opts.tools ?? null,
      documents: opts.documents ?? null,
      add_generation_prompt: opts.addGenerationPrompt,
    };
    let rendered: string;
    try {
      rendered = compiled.template.render(context);
    } catch (err) {
      throw new ChatTemplateError((err as Error).message);
    }
    return opts.continueFinalMessage ? cutAfterFinalMessage(rendered, finalMessageText(messages)) : rendered;
  }

  private requestTemplate(source: string): CompiledTemplate {
    let compiled = this.requestTemplates.get(source);
    if (!compiled) {
      compiled = compile(source);
      if (this.requestTemplates.size >= 16) this.requestTemplates.clear();
      this.requestTemplates.set(source, compiled);
    }
    return compiled;
  }
}

/**
 * Parses the template (or its variants) once; `specialTokens` (bos_token, eos_token, … from
 * tokenizer_config) are template variables. Throws ChatTemplateError when a template does not parse.
 */
export function createChatTemplate(
  source: string | ChatTemplateVariants,
  specialTokens: { bos_token?: string | null; eos_token?: string | null; [k: string]: unknown },
): ChatTemplate {
  const tokens: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(specialTokens)) {
    if (value !== undefined && value !== null) tokens[key] = value;
  }
  return new JinjaChatTemplate(typeof source === 'string' ? { default: source } : source, tokens);
}
