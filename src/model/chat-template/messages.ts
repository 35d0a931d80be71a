// Messages as the template sees them, following vLLM's chat_utils: content is a string for
// templates that print it, or a list of {type:'text', text} parts for templates that loop over
// it (vLLM's 'auto' content format), tool-call arguments arrive parsed from their JSON text, and
// an assistant message's thinking is under both `reasoning` and the older `reasoning_content`.

import type { ChatMessage } from '../types';
import { ChatTemplateError } from './errors';

export type ContentFormat = 'string' | 'openai';

type Node = Record<string, unknown>;

function isContentAccess(node: unknown): boolean {
  if (!node || typeof node !== 'object') return false;
  const n = node as Node;
  if (n.type !== 'MemberExpression') return false;
  const property = n.property as Node;
  return (property.type === 'StringLiteral' || (property.type === 'Identifier' && !n.computed))
    && property.value === 'content';
}

/** Strips filters and selects: `message['content'] | selectattr(...)` still loops over the content. */
function unwrapIterable(node: unknown): unknown {
  let current = node as Node | null;
  while (current && typeof current === 'object') {
    if (current.type === 'FilterExpression') current = current.operand as Node;
    else if (current.type === 'SelectExpression') current = current.lhs as Node;
    else break;
  }
  return current;
}

function walk(node: unknown, visit: (n: Node) => void): void {
  if (Array.isArray(node)) {
    for (const child of node) walk(child, visit);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const n = node as Node;
  if (typeof n.type === 'string') visit(n);
  for (const value of Object.values(n)) {
    if (value && typeof value === 'object') walk(value, visit);
  }
}

/**
 * 'openai' when the template iterates over a message's content (directly, or through a variable
 * set from it), as vLLM's content-format detection decides; 'string' otherwise.
 */
export function detectContentFormat(parsedTemplate: unknown): ContentFormat {
  const contentVariables = new Set<string>();
  walk(parsedTemplate, (n) => {
    const assignee = n.assignee as Node | undefined;
    if (n.type === 'Set' && assignee?.type === 'Identifier' && isContentAccess(n.value)) {
      contentVariables.add(assignee.value as string);
    }
  });
  let loopsOverContent = false;
  walk(parsedTemplate, (n) => {
    if (n.type !== 'For') return;
    const iterable = unwrapIterable(n.iterable) as Node | null;
    if (isContentAccess(iterable)
      || (iterable?.type === 'Identifier' && contentVariables.has(iterable.value as string))) {
      loopsOverContent = true;
    }
  });
  return loopsOverContent ? 'openai' : 'string';
}

type ContentPart = { type: 'text'; text: string } | { type: 'image' };

/** The text parts, and `{type: 'image'}` where an image stood when the model takes images. */
function contentParts(content: ChatMessage['content'], takesImages: boolean): ContentPart[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw new ChatTemplateError('message content must be a string or an array of parts');
  return content.map((part): ContentPart => {
    if (takesImages && part?.type === 'image') return { type: 'image' };
    if (part?.type !== 'text' || typeof part.text !== 'string') {
      throw new ChatTemplateError(`unsupported content part type '${String(part?.type)}': this model takes text only`);
    }
    return { type: 'text', text: part.text };
  });
}

/**
 * vLLM's 'string' content format: the text parts joined by newlines, after one placeholder line
 * per image the text does not already spell out (its _get_full_multimodal_text_prompt).
 */
function stringContent(parts: readonly ContentPart[], imagePlaceholder: string | null): string {
  const text = parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
  const images = parts.length - parts.filter((p) => p.type === 'text').length;
  if (images === 0 || imagePlaceholder === null) return text;
  const missing = images - text.split(imagePlaceholder).length + 1;
  return [...new Array<string>(Math.max(0, missing)).fill(imagePlaceholder), text].join('\n');
}

/** vLLM parses assistant tool-call arguments, so templates can `| tojson` them as objects. */
function parseToolCalls(toolCalls: unknown): unknown {
  if (!Array.isArray(toolCalls)) return toolCalls;
  return (toolCalls as unknown[]).map((call) => {
    const fn = (call as Node | null)?.function as Node | undefined;
    if (!fn) return call;
    let args = fn.arguments;
    if (!args) {
      args = {};
    } else if (typeof args === 'string') {
      try {
        args = JSON.parse(args) as unknown;
      } catch {
        throw new ChatTemplateError(`tool call arguments are not valid JSON: ${args as string}`);
      }
    }
    return { ...(call as Node), function: { ...fn, arguments: args } };
  });
}

export function normalizeMessages(messages: ChatMessage[], format: ContentFormat, imagePlaceholder: string | null = null): ChatMessage[] {
  return messages.map((message) => {
    const parts = contentParts(message.content, imagePlaceholder !== null);
    const content = format === 'string' ? stringContent(parts, imagePlaceholder) : parts;
    const normalized: ChatMessage = { ...message, content };
    if (message.role === 'assistant' && message.tool_calls !== undefined) {
      normalized.tool_calls = parseToolCalls(message.tool_calls);
    }
    const reasoning = message.reasoning ?? message.reasoning_content;
    if (message.role === 'assistant' && typeof reasoning === 'string') {
      normalized.reasoning = reasoning;
      normalized.reasoning_content = reasoning;
    }
    return normalized;
  });
}
