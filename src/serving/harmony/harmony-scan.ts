// Reads gpt-oss output in the harmony format into its messages, as far as the text goes:
//   <|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…<|return|>
//   <|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{…}<|call|>
// The prompt ends with `<|start|>assistant`, so the output may open mid-header. The recipient may
// stand before or after the channel. Text outside any message is kept as loose text. A tail that
// may be the start of a marker is held back until the text is final.

import { partialTagOverlap } from '../tool-parsers/json-scan';

export const HARMONY = {
  start: '<|start|>',
  channel: '<|channel|>',
  message: '<|message|>',
  constrain: '<|constrain|>',
  end: '<|end|>',
  call: '<|call|>',
  return: '<|return|>',
} as const;

const MARKERS = Object.values(HARMONY);
const BODY_ENDS = [HARMONY.end, HARMONY.call, HARMONY.return, HARMONY.start];

export interface HarmonyMessagePart {
  kind: 'message';
  /** Null until the header is complete (`<|message|>` seen). */
  channel: string | null;
  recipient: string | null;
  headerDone: boolean;
  body: string;
  /** Closed by <|end|>, <|call|>, <|return|> or the next <|start|>. */
  ended: boolean;
}

export interface HarmonyTextPart {
  kind: 'text';
  text: string;
}

export type HarmonyPart = HarmonyMessagePart | HarmonyTextPart;

/** Length of the longest tail of `text` that may still grow into a marker. */
function heldBack(text: string, final: boolean): number {
  return final ? 0 : Math.max(...MARKERS.map((m) => partialTagOverlap(text, m)));
}

function parseHeader(header: string): { channel: string; recipient: string | null } {
  const spaced = header.split(HARMONY.constrain).join(` ${HARMONY.constrain}`);
  const at = spaced.indexOf(HARMONY.channel);
  const channel = at < 0 ? '' : (spaced.slice(at + HARMONY.channel.length).trim().split(/\s+/)[0] ?? '');
  const recipient = /(?:^|\s)to=([^\s<]+)/.exec(spaced)?.[1] ?? null;
  return { channel, recipient };
}

/** Whether the text opens inside the assistant header the prompt began. */
function opensMidHeader(text: string): boolean {
  return text.startsWith(HARMONY.channel) || /^\s*to=/.test(text);
}

export function scanHarmony(text: string, final: boolean): HarmonyPart[] {
  const parts: HarmonyPart[] = [];
  let pos = 0;
  let headerStart = opensMidHeader(text) ? 0 : -1;
  while (pos <= text.length) {
    if (headerStart < 0) {
      const next = text.indexOf(HARMONY.start, pos);
      const end = next < 0 ? text.length - heldBack(text, final) : next;
      if (end > pos) parts.push({ kind: 'text', text: text.slice(pos, end) });
      if (next < 0) break;
      headerStart = next + HARMONY.start.length;
    }
    const messageAt = text.indexOf(HARMONY.message, headerStart);
    if (messageAt < 0) {
      parts.push({ kind: 'message', channel: null, recipient: null, headerDone: false, body: '', ended: false });
      break;
    }
    const { channel, recipient } = parseHeader(text.slice(headerStart, messageAt));
    const bodyStart = messageAt + HARMONY.message.length;
    let close = -1;
    let closer = '';
    for (const marker of BODY_ENDS) {
      const at = text.indexOf(marker, bodyStart);
      if (at >= 0 && (close < 0 || at < close)) { close = at; closer = marker; }
    }
    const bodyEnd = close >= 0 ? close : text.length - heldBack(text, final);
    parts.push({ kind: 'message', channel, recipient, headerDone: true, body: text.slice(bodyStart, Math.max(bodyStart, bodyEnd)), ended: close >= 0 });
    if (close < 0) break;
    // A <|start|> closes the body and opens the next header; the other closers are consumed.
    pos = closer === HARMONY.start ? close : close + closer.length;
    headerStart = -1;
  }
  return parts;
}

/** The message's text as the user sees it: final answers and commentary preambles (no recipient). */
export function isAnswer(part: HarmonyMessagePart): boolean {
  return part.headerDone && part.recipient === null && (part.channel === 'final' || part.channel === 'commentary');
}

/** A message addressed to a tool (`to=functions.x`, or a built-in such as `browser.search`). */
export function isToolCall(part: HarmonyMessagePart): boolean {
  return part.headerDone && part.recipient !== null && part.recipient !== 'all';
}
