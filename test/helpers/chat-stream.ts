// What a streamed chat completion said, joined across its chunks: reasoning, content and each
// tool call's name and arguments (the parsers' streaming output, as a client assembles it).

export interface StreamedChat {
  reasoning: string;
  content: string;
  calls: { name: string; arguments: string }[];
}

export async function collectChatStream(stream: AsyncIterable<any>): Promise<StreamedChat> {
  const out: StreamedChat = { reasoning: '', content: '', calls: [] };
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta ?? {};
    out.reasoning += delta.reasoning ?? '';
    out.content += delta.content ?? '';
    for (const call of delta.tool_calls ?? []) {
      if (call.id) out.calls[call.index] = { name: call.function.name, arguments: '' };
      out.calls[call.index].arguments += call.function.arguments ?? '';
    }
  }
  return out;
}
