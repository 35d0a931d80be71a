// What a streamed chat completion said, joined across its chunks: reasoning, content and each
// tool call's name and arguments (the parsers' streaming output, as a client assembles it).

export interface StreamedChat {
  reasoning: string;
  content: string;
  calls: { name: string; arguments: string }[];
}

/** A chat delta (a chunk's `delta`, or a parser's) joined into `out`: a call with an id starts, the rest append. */
export function foldChatDelta(out: StreamedChat, delta: { reasoning?: string | null; content?: string | null; tool_calls?: any[] | null }): void {
  out.reasoning += delta.reasoning ?? '';
  out.content += delta.content ?? '';
  for (const call of delta.tool_calls ?? []) {
    if (call.id) out.calls[call.index] = { name: call.function.name ?? '', arguments: '' };
    out.calls[call.index].arguments += call.function.arguments ?? '';
  }
}

export async function collectChatStream(stream: AsyncIterable<any>): Promise<StreamedChat> {
  const out: StreamedChat = { reasoning: '', content: '', calls: [] };
  for await (const chunk of stream) foldChatDelta(out, chunk.choices[0]?.delta ?? {});
  return out;
}
