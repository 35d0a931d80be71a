// Logprob formatting for the OpenAI shapes: completions (tokens / token_logprobs /
// top_logprobs / text_offset), chat (content entries with bytes) and vLLM's prompt_logprobs.

import type { PositionLogprobs, TokenLogprob } from '../engine/types';
import type { Tokenizer } from '../model/types';
import { takeTurn } from './yield-budget';

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
  tokenIds.forEach((id, i) => {
    const position = positions[i] ?? null;
    const token = namer.text(id);
    out.tokens.push(token);
    out.text_offset.push(offset);
    offset += token.length;
    if (!position) {
      out.token_logprobs.push(null);
      out.top_logprobs.push(null);
      return;
    }
    out.token_logprobs.push(clampLogprob(position.chosen.logprob));
    const top: Record<string, number> = {};
    for (const entry of chosenThenTop(position).slice(0, numTop + 1)) {
      top[namer.text(entry.tokenId)] = clampLogprob(entry.logprob);
    }
    out.top_logprobs.push(top);
  });
  return offset;
}

/** Positions formatted per turn for a whole answer: a few milliseconds with 20 top entries each. */
const POSITIONS_PER_TURN = 256;

/** appendCompletionLogprobs over a whole choice, taking turns with the event loop between slices. */
export async function appendCompletionLogprobsTakingTurns(
  ...[out, tokenIds, positions, numTop, namer, initialOffset]: Parameters<typeof appendCompletionLogprobs>
): Promise<number> {
  let offset = initialOffset;
  for (let start = 0; start < tokenIds.length; start += POSITIONS_PER_TURN) {
    await takeTurn();
    const end = start + POSITIONS_PER_TURN;
    offset = appendCompletionLogprobs(out, tokenIds.slice(start, end), positions.slice(start, end), numTop, namer, offset);
  }
  return offset;
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
  const entry = (t: TokenLogprob): ChatTopLogprob => ({
    token: namer.text(t.tokenId),
    logprob: clampLogprob(t.logprob),
    bytes: namer.bytes(t.tokenId),
  });
  return positions.map((position) => ({
    ...entry(position.chosen),
    top_logprobs: numTop > 0 ? position.top.slice(0, numTop).map(entry) : [],
  }));
}

/** chatLogprobEntries over a whole choice, taking turns with the event loop between slices. */
export async function chatLogprobEntriesTakingTurns(positions: readonly PositionLogprobs[], numTop: number, namer: TokenNamer): Promise<ChatLogprobEntry[]> {
  const entries: ChatLogprobEntry[] = [];
  for (let start = 0; start < positions.length; start += POSITIONS_PER_TURN) {
    await takeTurn();
    for (const entry of chatLogprobEntries(positions.slice(start, start + POSITIONS_PER_TURN), numTop, namer)) entries.push(entry);
  }
  return entries;
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
