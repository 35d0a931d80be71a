// GPT-2 byte-level alphabet: every byte maps to one printable code point so byte-level BPE
// vocabularies (GPT-2, Llama 3, Qwen2) can store arbitrary bytes as strings ('Ġ' = space).
// @huggingface/tokenizers keeps its copy of this table private, hence our own.

function buildByteToChar(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table = new Array<string>(256);
  for (const b of printable) table[b] = String.fromCharCode(b);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    if (table[b] === undefined) table[b] = String.fromCharCode(256 + shifted++);
  }
  return table;
}

/** byte value -> the code point standing for it in byte-level vocabularies. */
export const BYTE_TO_CHAR: readonly string[] = buildByteToChar();

/** Inverse of BYTE_TO_CHAR. */
const CHAR_TO_BYTE: ReadonlyMap<string, number> = new Map(
  BYTE_TO_CHAR.map((ch, byte) => [ch, byte] as const),
);

/** Bytes of a byte-level token string, or null when it contains a character outside the alphabet. */
export function byteLevelTokenToBytes(token: string): Uint8Array | null {
  const out = new Uint8Array(token.length);
  for (let i = 0; i < token.length; i++) {
    const byte = CHAR_TO_BYTE.get(token[i]);
    if (byte === undefined) return null;
    out[i] = byte;
  }
  return out;
}
