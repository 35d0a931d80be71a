// Drives a parser the way chat serving does: the whole text at once, or in pieces with
// `finished` on the last, and re-assembles the streamed deltas (checking each delta's shape).

import type { ToolParser, ToolParserDelta } from '../../../src/serving/tool-parsers';

export interface AssembledCall {
  id: string;
  name: string;
  arguments: string;
}

export interface Assembled {
  content: string | null;
  calls: AssembledCall[];
}

export function assemble(deltas: Array<ToolParserDelta | null>): Assembled {
  let content = '';
  const calls: AssembledCall[] = [];
  for (const delta of deltas) {
    if (!delta) continue;
    if (delta.content !== undefined) {
      expect(delta.content).not.toBe('');
      content += delta.content;
    }
    for (const call of delta.toolCalls ?? []) {
      if (call.id !== undefined) {
        // The first delta of a call: id, type and the whole name, once.
        expect(calls[call.index]).toBeUndefined();
        expect(call.index).toBe(calls.length);
        expect(call.type).toBe('function');
        expect(call.function.name).toEqual(expect.any(String));
        calls[call.index] = { id: call.id, name: call.function.name as string, arguments: call.function.arguments ?? '' };
      } else {
        expect(calls[call.index]).toBeDefined();
        expect(call.function.name).toBeUndefined();
        expect(call.function.arguments).toEqual(expect.any(String));
        calls[call.index].arguments += call.function.arguments;
      }
    }
  }
  return { content: content === '' ? null : content, calls };
}

/** Feeds `pieces` (the last one with finished) and re-assembles what came out. */
export function streamPieces(parser: ToolParser, pieces: string[]): Assembled {
  return assemble(pieces.map((piece, i) => parser.extractDelta(piece, i === pieces.length - 1)));
}

/** Every way of cutting `text` in two at a character boundary, then one piece per character. */
export function splits(text: string): string[][] {
  const chars = Array.from(text);
  const out: string[][] = [];
  for (let cut = 0; cut <= chars.length; cut++) out.push([chars.slice(0, cut).join(''), chars.slice(cut).join('')]);
  out.push(chars.length > 0 ? chars : ['']);
  return out;
}

/** The non-streaming result in the same shape (ids dropped by `withoutIds`). */
export function extracted(parser: ToolParser, text: string): Assembled {
  const result = parser.extract(text);
  return { content: result.content, calls: result.toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) };
}

export function withoutIds(a: Assembled): { content: string | null; calls: Array<{ name: string; arguments: string }> } {
  return { content: a.content, calls: a.calls.map(({ name, arguments: args }) => ({ name, arguments: args })) };
}
