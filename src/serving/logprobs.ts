// Logprob formatting for the OpenAI shapes: completions (tokens / token_logprobs /
// top_logprobs / text_offset), chat (content entries with bytes) and vLLM's prompt_logprobs.

import type { PositionLogprobs, TokenLogprob } from '../engine/types';
import type { Tokenizer } from '../model/types';
import { forEachTakingTurns, mapTakingTurns } from './yield-budget';

/** vLLM clamps -inf to this so the JSON stays valid. */
const MIN_LOGPROB = -9999.0;

const utf8 = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

export interface TokenNamer {
  /** The token as a string: its text, or "token_id:N" with return_tokens_as_token_ids. */
  text(id: number): string;
  /** The UTF-8 bytes a token stands for (chat `bytes`). */
  bytes(id: number): number[];
}

export function tokenNamer(tokenizer: Tokenizer | null, asTokenIds: boolean): TokenNamer {
  const cache = new Map<number, string>();
  const raw = (id: number): Uint8Array => tokenizer?.tokenBytes(id) ?? utf8Encoder.encode(`token_id:${id}`);
  return {
    text(id) {
      if (asTokenIds || !tokenizer) return `token_id:${id}`;
      let text = cache.get(id);
      if (text === undefined) {
        text = utf8.decode(raw(id));
        cache.set(id, text);
      }
      return text;
    },
    bytes(id) {
      return Array.from(asTokenIds ? utf8Encoder.encode(`token_id:${id}`) : raw(id));
    },
  };
}

export function clampLogprob(logprob: number): number {
  return Number.isNaN(logprob) ? MIN_LOGPROB : Math.max(logprob, MIN_LOGPROB);
}

/** Chosen token first, then the top entries in rank order, without repeating the chosen one. */
function chosenThenTop(position: PositionLogprobs): TokenLogprob[] {
  return [position.chosen, ...position.top.filter((t) => t.tokenId !== position.chosen.tokenId)];
}

// ---------------------------------------------------------------------------------------------
// Completions

export interface CompletionLogprobs {
  text_offset: number[];
  token_logprobs: (number | null)[];
  tokens: string[];
  top_logprobs: (Record<string, number> | null)[];
}

export function emptyCompletionLogprobs(): CompletionLogprobs {
  return { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] };
}

/**
 * Appends positions to a completion logprobs object. `positions[i]` null = no logprob for that
 * token (the first prompt token under echo). `initialOffset` is where these tokens' text starts
 * in the choice's text (streaming chunks continue from the previous chunk's end).
 */
export function appendCompletionLogprobs(
  out: CompletionLogprobs,
  tokenIds: readonly number[],
  positions: readonly (PositionLogprobs | null)[],
  numTop: number,
  namer: TokenNamer,
  initialOffset: number,
): number {
  let offset = initialOffset;
  tokenIds.forEach((id, i) => (offset = appendPosition(out, id, positions[i] ?? null, numTop, namer, offset)));
  return offset;
}

/** appendCompletionLogprobs over a whole choice, taking turns with the event loop (see forEachTakingTurns). */
export async function appendCompletionLogprobsTakingTurns(
  ...[out, tokenIds, positions, numTop, namer, initialOffset]: Parameters<typeof appendCompletionLogprobs>
): Promise<number> {
  let offset = initialOffset;
  await forEachTakingTurns(tokenIds, (id, i) => (offset = appendPosition(out, id, positions[i] ?? null, numTop, namer, offset)));
  return offset;
}

/** Appends one token's position; returns where the next token's text starts. */
function appendPosition(out: CompletionLogprobs, id: number, position: PositionLogprobs | null, numTop: number, namer: TokenNamer, offset: number): number {
  const token = namer.text(id);
  out.tokens.push(token);
  out.text_offset.push(offset);
  if (!position) {
    out.token_logprobs.push(null);
    out.top_logprobs.push(null);
  } else {
    out.token_logprobs.push(clampLogprob(position.chosen.logprob));
    const top: Record<string, number> = {};
    for (const entry of chosenThenTop(position).slice(0, numTop + 1)) {
      top[namer.text(entry.tokenId)] = clampLogprob(entry.logprob);
    }
    out.top_logprobs.push(top);
  }
  return offset + token.length;
}

// ---------------------------------------------------------------------------------------------
// Chat

export interface ChatTopLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

export interface ChatLogprobEntry extends ChatTopLogprob {
  top_logprobs: ChatTopLogprob[];
}

export interface ChatLogprobs {
  content: ChatLogprobEntry[] | null;
}

export function chatLogprobEntries(
  positions: readonly PositionLogprobs[],
  numTop: number,
  namer: TokenNamer,
): ChatLogprobEntry[] {
  return positions.map((position) => chatLogprobEntry(position, numTop, namer));
}

/** chatLogprobEntries over a whole choice, taking turns with the event loop (see mapTakingTurns). */
export function chatLogprobEntriesTakingTurns(positions: readonly PositionLogprobs[], numTop: number, namer: TokenNamer): Promise<ChatLogprobEntry[]> {
  return mapTakingTurns(positions, (position) => chatLogprobEntry(position, numTop, namer));
}

function chatLogprobEntry(position: PositionLogprobs, numTop: number, namer: TokenNamer): ChatLogprobEntry {
  const entry = (t: TokenLogprob): ChatTopLogprob => ({
    token: namer.text(t.tokenId),
    logprob: clampLogprob(t.logprob),
    bytes: namer.bytes(t.tokenId),
  });
  return { ...entry(position.chosen), top_logprobs: numTop > 0 ? position.top.slice(0, numTop).map(entry) : [] };
}

// ---------------------------------------------------------------------------------------------
// prompt_logprobs (vLLM extra): per position {token_id: {logprob, rank, decoded_token}}, first null.

export interface PromptLogprobEntry {
  logprob: number;
  rank: number;
  decoded_token: string;
}

export function formatPromptLogprobs(
  positions: readonly (PositionLogprobs | null)[] | null,
  namer: TokenNamer,
): (Record<string, PromptLogprobEntry> | null)[] | null {
  if (!positions) return null;
  return positions.map((position) => {
    if (!position) return null;
    const out: Record<string, PromptLogprobEntry> = {};
    for (const t of chosenThenTop(position)) {
      out[String(t.tokenId)] = { logprob: clampLogprob(t.logprob), rank: t.rank, decoded_token: namer.text(t.tokenId) };
    }
    return out;
  });
}
