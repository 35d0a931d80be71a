// The shared machinery of the built-in parsers: a parser only says what its format looks like
// in a text (`scan`), and this base turns that into the non-streaming result and, by re-scanning
// the growing text and sending what is new, into OpenAI tool-call deltas.

import { partialTagOverlap } from './json-scan';
import { makeToolCallId } from './tool-call-id';
import type { ExtractedToolCalls, ToolCallDelta, ToolParser, ToolParserContext, ToolParserDelta } from './types';

/** One tool call as far as the text goes. */
export interface ScannedCall {
  /** Null until the whole name is known. */
  name: string | null;
  /** The arguments JSON text so far. */
  arguments: string;
  /** The arguments text is final. */
  argumentsComplete: boolean;
  /**
   * The arguments text only grows (it is the model's own JSON text), so it may be sent piece by
   * piece; otherwise (converted formats) it is sent once complete.
   */
  streamable: boolean;
}

export interface ScanResult {
  /** Text that is surely not part of a tool call: always a prefix of the scanned text. */
  content: string;
  calls: ScannedCall[];
  /** A call cannot be completed into a valid one; a final scan then means "all content". */
  malformed: boolean;
}

/** The scan of a text without `tag` (yet): all content, less a tail that may be the tag's start. */
export function beforeTag(text: string, tag: string, final: boolean): ScanResult {
  return { content: final ? text : text.slice(0, text.length - partialTagOverlap(text, tag)), calls: [], malformed: false };
}

interface SentCall {
  id: string;
  arguments: string;
}

export abstract class ScanningToolParser implements ToolParser {
  private text = '';
  private sentContent = 0;
  private readonly sent: SentCall[] = [];

  constructor(protected readonly context: ToolParserContext) {}

  /**
   * Reads `text`. When `final`, the text is the whole output: nothing is held back for a tag
   * that might still be growing, and every call must be complete and valid (else `malformed`).
   */
  protected abstract scan(text: string, final: boolean): ScanResult;

  protected newCallId(): string {
    return makeToolCallId();
  }

  private safeScan(text: string, final: boolean): ScanResult {
    try {
      return this.scan(text, final);
    } catch {
      return { content: '', calls: [], malformed: true };
    }
  }

  extract(text: string): ExtractedToolCalls {
    const result = this.safeScan(text, true);
    const complete = result.calls.every((c) => c.name !== null && c.argumentsComplete);
    if (result.malformed || result.calls.length === 0 || !complete) return { toolCalls: [], content: text };
    return {
      toolCalls: result.calls.map((c) => ({
        id: this.newCallId(),
        type: 'function' as const,
        function: { name: c.name as string, arguments: c.arguments },
      })),
      content: result.content === '' ? null : result.content,
    };
  }

  extractDelta(delta: string, finished: boolean): ToolParserDelta | null {
    this.text += delta;
    const result = this.safeScan(this.text, finished);
    const out: ToolParserDelta = {};
    if (result.malformed && finished && this.sent.length === 0) {
      // Not a tool call after all: everything not sent yet is content.
      if (this.text.length > this.sentContent) out.content = this.text.slice(this.sentContent);
      this.sentContent = this.text.length;
      return out.content ? out : null;
    }
    if (result.content.length > this.sentContent) {
      out.content = result.content.slice(this.sentContent);
      this.sentContent = result.content.length;
    }
    const calls = this.callDeltas(result.calls);
    if (calls.length > 0) out.toolCalls = calls;
    return out.content || out.toolCalls ? out : null;
  }

  private callDeltas(calls: ScannedCall[]): ToolCallDelta[] {
    const deltas: ToolCallDelta[] = [];
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index];
      const ready = call.streamable || call.argumentsComplete ? call.arguments : '';
      let sent = this.sent[index];
      if (!sent) {
        // Calls go out in order: a later call waits until this one's name is known.
        if (call.name === null) break;
        sent = { id: this.newCallId(), arguments: ready };
        this.sent.push(sent);
        deltas.push({ index, id: sent.id, type: 'function', function: { name: call.name, arguments: ready } });
        continue;
      }
      if (ready.length > sent.arguments.length && ready.startsWith(sent.arguments)) {
        deltas.push({ index, function: { arguments: ready.slice(sent.arguments.length) } });
        sent.arguments = ready;
      }
    }
    return deltas;
  }
}
