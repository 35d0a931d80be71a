// Builds a response's output items from generation deltas and says what happened as OpenAI's
// stream events, in OpenAI's order: an item opens (output_item.added, content_part.added),
// receives deltas (output_text / reasoning_text / function_call_arguments .delta), and closes
// (….done, content_part.done, output_item.done) when the next kind of output starts or the
// generation ends. The non-streaming path feeds the same builder and keeps only `items`.
// Whitespace between items (Qwen3's `</think>\n\n<tool_call>`) waits: a function call after it
// drops it (as vLLM drops whitespace-only content beside tool calls), anything else sends it.

import type { ChatOutputDelta } from '../chat-output';
import type { ChatLogprobEntry } from '../logprobs';
import { isCompleteJson, type ToolCallDelta } from '../tool-parsers';
import { itemId } from './input-items';
import type { FunctionCallItem, MessageItem, OutputItem, ReasoningItem } from './protocol';

/** An event before the runner stamps its sequence_number. */
export type UnnumberedEvent = { type: string; [key: string]: unknown };

/** One parsed piece of output: chat's delta shape, as the output parser splits a text delta. */
export type OutputDelta = ChatOutputDelta;

type ItemStatus = 'completed' | 'incomplete';

export class OutputBuilder {
  readonly items: OutputItem[] = [];
  private open: { item: OutputItem; toolIndex: number | null; logprobs: ChatLogprobEntry[] } | null = null;
  /** Whitespace-only text waiting to learn whether a function call follows. */
  private held = { text: '', logprobs: [] as ChatLogprobEntry[] };

  private get outputIndex(): number {
    return this.items.length - 1;
  }

  /** Output text (with its tokens' logprobs when the request included them). */
  text(delta: string, logprobs: ChatLogprobEntry[] = []): UnnumberedEvent[] {
    if (this.open?.item.type !== 'message' && delta.trim() === '') {
      this.held = { text: this.held.text + delta, logprobs: [...this.held.logprobs, ...logprobs] };
      return [];
    }
    const held = this.takeHeld();
    return this.appendText(held.text + delta, [...held.logprobs, ...logprobs]);
  }

  private takeHeld(): { text: string; logprobs: ChatLogprobEntry[] } {
    const held = this.held;
    this.held = { text: '', logprobs: [] };
    return held;
  }

  /** Held whitespace goes out as text after all (anything but a function call came next). */
  private releaseHeld(): UnnumberedEvent[] {
    const held = this.takeHeld();
    return held.text || held.logprobs.length > 0 ? this.appendText(held.text, held.logprobs) : [];
  }

  private appendText(delta: string, logprobs: ChatLogprobEntry[]): UnnumberedEvent[] {
    const events = this.switchTo('message', null);
    const open = this.open!;
    const part = (open.item as MessageItem).content[0];
    part.text += delta;
    open.logprobs.push(...logprobs);
    const common = { item_id: open.item.id, output_index: this.outputIndex, content_index: 0 };
    events.push({ type: 'response.output_text.delta', ...common, delta, logprobs });
    return events;
  }

  /** Reasoning text (what a reasoning parser split off the output). */
  reasoning(delta: string): UnnumberedEvent[] {
    const events = this.releaseHeld();
    events.push(...this.switchTo('reasoning', null));
    const item = this.open!.item as ReasoningItem;
    item.content[0].text += delta;
    events.push({ type: 'response.reasoning_text.delta', item_id: item.id, output_index: this.outputIndex, content_index: 0, delta });
    return events;
  }

  /** A function call fragment (what a tool-call parser extracted). */
  toolCall(delta: ToolCallDelta): UnnumberedEvent[] {
    this.takeHeld();
    const events = this.switchTo('function_call', delta.index, delta);
    const item = this.open!.item as FunctionCallItem;
    const fragment = delta.function.arguments;
    if (fragment) {
      item.arguments += fragment;
      events.push({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: this.outputIndex, delta: fragment });
    }
    return events;
  }

  /** A parsed delta, in the order its parts were written: reasoning, text, tool calls. */
  add(delta: OutputDelta, logprobs: ChatLogprobEntry[] = []): UnnumberedEvent[] {
    const events: UnnumberedEvent[] = [];
    if (delta.reasoning) events.push(...this.reasoning(delta.reasoning));
    if (delta.content || logprobs.length > 0) events.push(...this.text(delta.content ?? '', logprobs));
    for (const call of delta.tool_calls ?? []) events.push(...this.toolCall(call));
    return events;
  }

  /**
   * Closes the open item; with no output at all, an empty message is the output (as vLLM). A
   * function call whose arguments are whole JSON is complete even when the generation was cut.
   */
  finish(status: ItemStatus): UnnumberedEvent[] {
    const events = this.releaseHeld();
    if (this.items.length === 0) events.push(...this.switchTo('message', null));
    const item = this.open?.item;
    const wholeCall = item?.type === 'function_call' && isCompleteJson(item.arguments);
    events.push(...this.close(wholeCall ? 'completed' : status));
    return events;
  }

  private switchTo(type: OutputItem['type'], toolIndex: number | null, call?: ToolCallDelta): UnnumberedEvent[] {
    if (this.open && this.open.item.type === type && this.open.toolIndex === toolIndex) return [];
    const events = this.close('completed');
    const item = newItem(type, call);
    this.items.push(item);
    this.open = { item, toolIndex, logprobs: [] };
    const output_index = this.outputIndex;
    events.push({ type: 'response.output_item.added', output_index, item: snapshot(item, 'in_progress') });
    if (type === 'message') {
      events.push({ type: 'response.content_part.added', item_id: item.id, output_index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    } else if (type === 'reasoning') {
      events.push({ type: 'response.content_part.added', item_id: item.id, output_index, content_index: 0, part: { type: 'reasoning_text', text: '' } });
    }
    return events;
  }

  private close(status: ItemStatus): UnnumberedEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = null;
    const { item } = open;
    item.status = status;
    const common = { item_id: item.id, output_index: this.items.indexOf(item) };
    const events: UnnumberedEvent[] = [];
    if (item.type === 'message') {
      const part = item.content[0];
      part.logprobs = open.logprobs;
      events.push({ type: 'response.output_text.done', ...common, content_index: 0, text: part.text, logprobs: open.logprobs });
      events.push({ type: 'response.content_part.done', ...common, content_index: 0, part: { ...part } });
    } else if (item.type === 'reasoning') {
      const part = item.content[0];
      events.push({ type: 'response.reasoning_text.done', ...common, content_index: 0, text: part.text });
      events.push({ type: 'response.content_part.done', ...common, content_index: 0, part: { ...part } });
    } else {
      events.push({ type: 'response.function_call_arguments.done', ...common, name: item.name, arguments: item.arguments });
    }
    events.push({ type: 'response.output_item.done', output_index: common.output_index, item: snapshot(item, status) });
    return events;
  }
}

function newItem(type: OutputItem['type'], call?: ToolCallDelta): OutputItem {
  switch (type) {
    case 'message':
      return { id: itemId('msg'), type, role: 'assistant', status: 'in_progress', content: [{ type: 'output_text', text: '', annotations: [], logprobs: [] }] };
    case 'reasoning':
      return { id: itemId('rs'), type, summary: [], content: [{ type: 'reasoning_text', text: '' }], status: 'in_progress' };
    case 'function_call':
      return { id: itemId('fc'), type, call_id: call?.id ?? itemId('call'), name: call?.function.name ?? '', arguments: '', status: 'in_progress' };
  }
}

/** The item as an event shows it: a copy, empty while it is being added. */
function snapshot(item: OutputItem, status: OutputItem['status']): OutputItem {
  if (status !== 'in_progress') return JSON.parse(JSON.stringify(item)) as OutputItem;
  switch (item.type) {
    case 'message':
      return { ...item, status, content: [] };
    case 'reasoning':
      return { ...item, status, content: [] };
    case 'function_call':
      return { ...item, status, arguments: '' };
  }
}
