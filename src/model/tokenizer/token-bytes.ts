// tokenBytes: the raw bytes one vocabulary entry contributes in the middle of a sequence.
// Which mapping applies is read off the tokenizer.json decoder chain, the part of the file that
// states how token strings become text.

import { byteLevelTokenToBytes } from './byte-level';

type Json = Record<string, unknown>;

interface DecoderTraits {
  byteLevel: boolean;
  byteFallback: boolean;
  /** Characters the decoder turns into spaces (SentencePiece '▁'). */
  spaceMarkers: string[];
}

function collectTraits(decoder: unknown, traits: DecoderTraits): void {
  if (!decoder || typeof decoder !== 'object') return;
  const config = decoder as Json;
  switch (config.type) {
    case 'Sequence':
      for (const child of (config.decoders as unknown[]) ?? []) collectTraits(child, traits);
      break;
    case 'ByteLevel':
      traits.byteLevel = true;
      break;
    case 'ByteFallback':
      traits.byteFallback = true;
      break;
    case 'Metaspace':
      traits.spaceMarkers.push(typeof config.replacement === 'string' ? config.replacement : '▁');
      break;
    case 'Replace': {
      const pattern = config.pattern as Json | undefined;
      if (typeof pattern?.String === 'string' && config.content === ' ') traits.spaceMarkers.push(pattern.String);
      break;
    }
    default:
      break;
  }
}

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;
const encoder = new TextEncoder();

/** Returns a function mapping an ordinary (non-added) token string to its bytes. */
export function tokenBytesResolver(decoderConfig: unknown): (token: string) => Uint8Array {
  const traits: DecoderTraits = { byteLevel: false, byteFallback: false, spaceMarkers: [] };
  collectTraits(decoderConfig, traits);
  return (token) => {
    if (traits.byteFallback) {
      const match = BYTE_TOKEN.exec(token);
      if (match) return Uint8Array.of(parseInt(match[1], 16));
    }
    if (traits.byteLevel) {
      const bytes = byteLevelTokenToBytes(token);
      if (bytes) return bytes;
    }
    let text = token;
    for (const marker of traits.spaceMarkers) text = text.split(marker).join(' ');
    return encoder.encode(text);
  };
}
