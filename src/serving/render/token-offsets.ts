// token_offsets for /render: the [start, end) character span (Unicode code points, as Python
// indexes) of each prompt token in the text it was encoded from. Our Tokenizer contract has no
// offset mapping, so we align each token's raw bytes against the UTF-8 bytes of the text.
// SentencePiece's dummy-prefix space and special tokens (BOS, chat markers) are handled: a
// token that matches nothing gets an empty span at the cursor, like HF's (0, 0) for BOS.

import type { Tokenizer } from '../../model/types';

function startsWithAt(haystack: Uint8Array, needle: Uint8Array, at: number): boolean {
  if (needle.length === 0 || at + needle.length > haystack.length) return false;
  for (let i = 0; i < needle.length; i++) if (haystack[at + i] !== needle[i]) return false;
  return true;
}

/** byteToChar[b] = number of code points that start before byte b (for b in 0..bytes.length). */
function byteToCharIndex(bytes: Uint8Array): Int32Array {
  const map = new Int32Array(bytes.length + 1);
  let chars = 0;
  for (let b = 0; b < bytes.length; b++) {
    // A code point starts at every byte that is not a UTF-8 continuation byte (10xxxxxx).
    if ((bytes[b] & 0xc0) !== 0x80) {
      map[b] = chars;
      chars += 1;
    } else {
      map[b] = chars - 1;
    }
  }
  map[bytes.length] = chars;
  return map;
}

/** Byte span [start, end) of the token at `cursor`, or null when it does not match the text there. */
function matchToken(tokenizer: Tokenizer, id: number, text: Uint8Array, cursor: number): [number, number] | null {
  const encoder = new TextEncoder();
  const candidates: Uint8Array[] = [tokenizer.tokenBytes(id)];
  const piece = tokenizer.idToToken(id);
  if (piece !== undefined) candidates.push(encoder.encode(piece));
  for (const bytes of candidates) {
    if (startsWithAt(text, bytes, cursor)) return [cursor, cursor + bytes.length];
    // SentencePiece adds a leading space ('▁') the text does not have.
    if (bytes[0] === 0x20 && startsWithAt(text, bytes.subarray(1), cursor)) return [cursor, cursor + bytes.length - 1];
  }
  return null;
}

export function tokenOffsets(tokenizer: Tokenizer, text: string, tokenIds: readonly number[]): [number, number][] {
  const bytes = new TextEncoder().encode(text);
  const toChar = byteToCharIndex(bytes);
  let cursor = 0;
  const offsets: [number, number][] = [];
  for (const id of tokenIds) {
    const span = matchToken(tokenizer, id, bytes, cursor);
    if (!span) {
      offsets.push([toChar[cursor], toChar[cursor]]);
      continue;
    }
    const [start, end] = span;
    // A byte-fallback token covering part of a character spans that whole character.
    const endChar = end < bytes.length && (bytes[end] & 0xc0) === 0x80 ? toChar[end] + 1 : toChar[end];
    offsets.push([toChar[start], endChar]);
    cursor = end;
  }
  return offsets;
}
