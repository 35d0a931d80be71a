// The Responses API's `input` (a string or a list of items) as the items input_items returns,
// and items as the chat messages the template renders: messages, function_call (an assistant
// tool call), function_call_output (a `tool` message) and reasoning items, merged the way vLLM
// merges them (a call or reasoning right after an assistant message joins that message).

import { RequestValidationError } from '../../engine/errors';
import { randomRequestId } from '../ids';
import { forEachTakingTurns, mapTakingTurns } from '../yield-budget';
import type { InputItem, OutputItem } from './protocol';

export type ChatMessageDict = Record<string, unknown> & { role: string };

const MESSAGE_ROLES = new Set(['user', 'system', 'developer', 'assistant']);

/** `<prefix>_<32 hex>`, OpenAI's item id shape. */
export function itemId(prefix: string): string {
  return `${prefix}_${randomRequestId()}`;
}

function asObject(value: unknown, param: string): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new RequestValidationError(`${param} must be an object.`, 'input');
  return value as Record<string, unknown>;
}

function requireString(item: Record<string, unknown>, key: string, where: string): string {
  const value = item[key];
  if (typeof value !== 'string') throw new RequestValidationError(`${where}.${key} must be a string.`, 'input');
  return value;
}

function normalizeItem(raw: unknown, index: number): InputItem {
  const where = `input[${index}]`;
  const item = asObject(raw, where);
  const type = item.type ?? (typeof item.role === 'string' ? 'message' : undefined);
  switch (type) {
    case 'message': {
      if (typeof item.role !== 'string' || !MESSAGE_ROLES.has(item.role)) {
        throw new RequestValidationError(`${where}.role must be one of user, system, developer, assistant.`, 'input');
      }
      const content = typeof item.content === 'string' ? [{ type: item.role === 'assistant' ? 'output_text' : 'input_text', text: item.content }] : item.content;
      if (!Array.isArray(content)) throw new RequestValidationError(`${where}.content must be a string or a list of content parts.`, 'input');
      return { ...item, id: (item.id as string | undefined) ?? itemId('msg'), type: 'message', content };
    }
    case 'function_call':
      requireString(item, 'call_id', where);
      requireString(item, 'name', where);
      requireString(item, 'arguments', where);
      return { ...item, id: (item.id as string | undefined) ?? itemId('fc'), type: 'function_call' };
    case 'function_call_output':
      requireString(item, 'call_id', where);
      if (typeof item.output !== 'string' && !Array.isArray(item.output)) {
        throw new RequestValidationError(`${where}.output must be a string or a list of content parts.`, 'input');
      }
      return { ...item, id: (item.id as string | undefined) ?? itemId('fco'), type: 'function_call_output' };
    case 'reasoning':
      if (item.encrypted_content != null) throw new RequestValidationError('Encrypted reasoning content is not supported.', 'input');
      return { ...item, id: (item.id as string | undefined) ?? itemId('rs'), type: 'reasoning' };
    default:
      throw new RequestValidationError(`${where}: input items of type ${JSON.stringify(type ?? null)} are not supported.`, 'input');
  }
}

/** The request's `input` as a list of items, each with an id. */
export function normalizeInput(input: unknown): InputItem[] {
  if (typeof input === 'string') return [{ id: itemId('msg'), type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  if (!Array.isArray(input)) throw new RequestValidationError('input must be a string or a list of input items.', 'input');
  return input.map(normalizeItem);
}

/** normalizeInput for a request's own input, which may hold a million items: takes turns with the event loop. */
export async function normalizeInputTakingTurns(input: unknown): Promise<InputItem[]> {
  return Array.isArray(input) ? mapTakingTurns(input, normalizeItem) : normalizeInput(input);
}

function partsText(parts: unknown): string {
  if (typeof parts === 'string') return parts;
  if (!Array.isArray(parts)) return '';
  return parts
    .map((p) => (p && typeof p === 'object' ? ((p as { text?: unknown }).text ?? '') : typeof p === 'string' ? p : ''))
    .filter((t): t is string => typeof t === 'string')
    .join('\n');
}

function reasoningText(item: Record<string, unknown>): string {
  const content = item.content as Array<{ text?: string }> | undefined;
  if (Array.isArray(content) && content.length > 0) return content.map((c) => c.text ?? '').join('');
  const summary = item.summary as Array<{ text?: string }> | undefined;
  return Array.isArray(summary) && summary.length > 0 ? (summary[0].text ?? '') : '';
}

/** Folds items into chat messages one at a time (a call or reasoning joins the assistant message before it). */
class MessageMerger {
  readonly messages: ChatMessageDict[] = [];

  constructor(private readonly skipReasoning: boolean) {}

  private lastAssistant(): ChatMessageDict | null {
    const last = this.messages[this.messages.length - 1];
    return last && last.role === 'assistant' ? last : null;
  }

  add(raw: InputItem | OutputItem): void {
    const item = raw as Record<string, unknown>;
    const messages = this.messages;
    switch (item.type) {
      case 'message': {
        const role = item.role as string;
        const prev = this.lastAssistant();
        if (role === 'assistant' && prev && prev.content == null) {
          prev.content = partsText(item.content);
        } else {
          // Content parts go to the template as they are; prepareChatMessages checks and flattens them.
          messages.push({ role, content: item.content });
        }
        break;
      }
      case 'function_call': {
        const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
        const prev = this.lastAssistant();
        // Pushed, not copied: a long run of calls stays linear.
        if (prev) ((prev.tool_calls ??= []) as unknown[]).push(call);
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output':
        messages.push({ role: 'tool', content: partsText(item.output), tool_call_id: item.call_id });
        break;
      case 'reasoning': {
        if (this.skipReasoning) break;
        const prev = this.lastAssistant();
        if (prev && prev.reasoning == null) prev.reasoning = reasoningText(item);
        else messages.push({ role: 'assistant', content: null, reasoning: reasoningText(item) });
        break;
      }
    }
  }
}

/** Input (or previous output) items as chat messages for the template. */
export function itemsToMessages(items: ReadonlyArray<InputItem | OutputItem>, options: { skipReasoning?: boolean } = {}): ChatMessageDict[] {
  const merger = new MessageMerger(!!options.skipReasoning);
  for (const item of items) merger.add(item);
  return merger.messages;
}

/** itemsToMessages over a request's own input, taking turns with the event loop. */
export async function itemsToMessagesTakingTurns(items: readonly InputItem[]): Promise<ChatMessageDict[]> {
  const merger = new MessageMerger(false);
  await forEachTakingTurns(items, (item) => merger.add(item));
  return merger.messages;
}

/** vLLM continues a final assistant message (or reasoning) whose status says it was cut off. */
export function continuesFinalMessage(items: readonly InputItem[]): boolean {
  const last = items[items.length - 1];
  if (!last || (last.type !== 'message' && last.type !== 'reasoning')) return false;
  if (last.type === 'message' && last.role !== 'assistant') return false;
  return last.status === 'in_progress' || last.status === 'incomplete';
}

/** previous_input_messages: chat messages sent by the client instead of a stored conversation. */
export function checkPreviousInputMessages(messages: unknown): ChatMessageDict[] {
  if (!Array.isArray(messages)) throw new RequestValidationError('previous_input_messages must be a list of messages.', 'previous_input_messages');
  return messages.map((m, i) => {
    if (!m || typeof m !== 'object' || typeof (m as { role?: unknown }).role !== 'string') {
      throw new RequestValidationError(`previous_input_messages[${i}] must be a message with a role.`, 'previous_input_messages');
    }
    return m as ChatMessageDict;
  });
}
