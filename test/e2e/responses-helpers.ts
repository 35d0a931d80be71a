// Checks of a /v1/responses event stream read with the official `openai` client: numbering, the
// order of each output item's events (OpenAI's), deltas that join to the done values, and the
// output the client's own accumulator assembles from the events.

import type OpenAI from 'openai';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Each item kind's events from output_item.added to output_item.done ("response." and "output_item." left out). */
const ITEM_EVENTS: Record<string, RegExp> = {
  message: /^added content_part\.added( output_text\.delta)* output_text\.done content_part\.done done$/,
  reasoning: /^added content_part\.added( reasoning_text\.delta)* reasoning_text\.done content_part\.done done$/,
  function_call: /^added( function_call_arguments\.delta)* function_call_arguments\.done done$/,
};

const shortType = (type: string) => type.replace(/^response\./, '').replace(/^output_item\./, '');

/** The joined deltas of one item and what its done events and final item say. */
function expectDeltasJoin(item: any, events: any[]): void {
  const joined = (type: string) => events.filter((e) => e.type === type).map((e) => e.delta).join('');
  const done = (type: string) => events.find((e) => e.type === type);
  if (item.type === 'message') {
    expect(joined('response.output_text.delta')).toBe(done('response.output_text.done').text);
    expect(item.content[0].text).toBe(done('response.output_text.done').text);
  } else if (item.type === 'reasoning') {
    expect(joined('response.reasoning_text.delta')).toBe(done('response.reasoning_text.done').text);
    expect(item.content[0].text).toBe(done('response.reasoning_text.done').text);
  } else {
    const argsDone = done('response.function_call_arguments.done');
    expect(joined('response.function_call_arguments.delta')).toBe(argsDone.arguments);
    expect(item).toMatchObject({ arguments: argsDone.arguments, name: argsDone.name });
  }
}

export interface StreamedResponse {
  events: any[];
  /** The terminal event's response. */
  response: any;
}

/**
 * Checks a complete event stream and returns its final response: events numbered from 0,
 * created / in_progress first and a terminal event last, items one after another each with its
 * kind's events in OpenAI's order and deltas that join to its done values, and the output the
 * client's accumulator builds from the events equal to the final response's.
 */
export function checkEventStream(events: any[]): StreamedResponse {
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  expect(events.slice(0, 2).map((e) => e.type)).toEqual(['response.created', 'response.in_progress']);
  const last = events[events.length - 1];
  expect(TERMINAL.has(last.type)).toBe(true);
  const itemEvents = events.filter((e) => e.output_index !== undefined);
  const indexes = itemEvents.map((e) => e.output_index as number);
  expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
  const output = last.response.output;
  output.forEach((item: any, index: number) => {
    const own = itemEvents.filter((e) => e.output_index === index);
    expect(own[0].item.type).toBe(item.type);
    expect(own.map((e) => shortType(e.type)).join(' ')).toMatch(ITEM_EVENTS[item.type]);
    expect(own[own.length - 1].item).toEqual(item);
    expectDeltasJoin(item, own);
  });
  let snapshot: any;
  for (const event of events.slice(0, -1)) snapshot = accumulateResponse(event, snapshot);
  expect(snapshot.output).toEqual(output);
  return { events, response: last.response };
}

/** Streams a response (`create` with stream: true) and checks its events. */
export async function streamResponse(client: OpenAI, body: Record<string, unknown>): Promise<StreamedResponse> {
  const stream = await (client.responses.create as any)({ ...body, stream: true });
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  return checkEventStream(events);
}

/** Output items without the random parts (item ids, call ids), to compare two runs. */
export function withoutIds(items: any[]): unknown[] {
  return items.map(({ id: _id, call_id: _callId, ...rest }) => rest);
}
