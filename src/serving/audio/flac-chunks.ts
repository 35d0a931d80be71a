// A FLAC file in small pieces for audio-decode's streaming FLAC decoder. Its frame parser misses
// a frame whose header is split between two pieces (that frame's audio is lost), so each piece
// ends just before a frame sync code (0xFFF8/0xFFF9): a header always starts a piece. The first
// piece holds all metadata blocks, which the decoder reads in one go.

import { id3Length } from './declared-duration';

const SYNC = 0xff;

export function* flacChunks(bytes: Uint8Array, size: number): Generator<Uint8Array> {
  let from = 0;
  let end = metadataEnd(bytes) + size;
  while (from < bytes.length) {
    let cut = Math.min(end, bytes.length);
    while (cut < bytes.length - 1 && !(bytes[cut] === SYNC && (bytes[cut + 1] & 0xfe) === 0xf8)) cut++;
    if (cut >= bytes.length - 1) cut = bytes.length;
    yield bytes.subarray(from, cut);
    from = cut;
    end = cut + size;
  }
}

/** Offset of the first audio frame: after "fLaC" and its metadata blocks (0 if none are found). */
function metadataEnd(bytes: Uint8Array): number {
  const start = indexOfMagic(bytes);
  if (start < 0) return 0;
  let at = start + 4;
  while (at + 4 <= bytes.length) {
    const last = bytes[at] & 0x80;
    at += 4 + ((bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]);
    if (last) break;
  }
  return Math.min(at, bytes.length);
}

/** "fLaC" at the start or after an ID3v2 tag. */
function indexOfMagic(bytes: Uint8Array): number {
  const at = id3Length(bytes);
  return bytes[at] === 0x66 && bytes[at + 1] === 0x4c && bytes[at + 2] === 0x61 && bytes[at + 3] === 0x43 ? at : -1;
}
