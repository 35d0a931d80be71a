// Parsers for human-readable numbers in flags, following vLLM: lowercase suffixes are decimal
// (1k = 1000), uppercase are binary (1K = 1024); byte sizes also accept KiB/MiB/GiB and KB/MB/GB.

const DECIMAL: Record<string, number> = { k: 1e3, m: 1e6, g: 1e9, t: 1e12 };
const BINARY: Record<string, number> = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };

/** "32k" -> 32000, "32K" -> 32768, "4096" -> 4096. Throws on anything else. */
export function parseHumanInt(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)\s*$/.exec(text);
  if (!m) throw new Error(`'${text}' is not a number (examples: 4096, 32k, 32K)`);
  const unit = m[2] ? (DECIMAL[m[2]] ?? BINARY[m[2]]) : 1;
  const value = Number(m[1]) * unit;
  if (!Number.isInteger(value)) throw new Error(`'${text}' is not a whole number`);
  return value;
}

/** "512MiB", "2GiB", "2G" (binary), "1.5GB" (decimal), "1048576" -> bytes. */
export function parseByteSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(?:([kmgtKMGT])(i?)([bB]?))?\s*$/.exec(text);
  if (!m) throw new Error(`'${text}' is not a size in bytes (examples: 512MiB, 2GiB, 1073741824)`);
  let unit = 1;
  if (m[2]) {
    // KiB -> binary; KB -> decimal; a bare letter follows parseHumanInt (K binary, k decimal).
    const binary = m[3] === 'i' || (m[4] === '' && m[2] === m[2].toUpperCase());
    unit = binary ? BINARY[m[2].toUpperCase()] : DECIMAL[m[2].toLowerCase()];
  }
  return Math.floor(Number(m[1]) * unit);
}

/** A strict integer (no suffixes, no fractions). */
export function parseInteger(text: string): number {
  if (!/^\s*-?\d+\s*$/.test(text)) throw new Error(`'${text}' is not an integer`);
  return Number(text);
}

/** vLLM takes CORS lists as JSON ('["*"]'); a bare comma-separated list is accepted too. */
export function parseStringList(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new Error(`'${text}' is not a JSON list of strings`);
    }
    if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) {
      throw new Error(`'${text}' is not a JSON list of strings`);
    }
    return parsed;
  }
  return trimmed.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

/** A number in (0, 1]. */
export function parseFraction(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || n > 1) throw new Error(`'${text}' must be a number in (0, 1]`);
  return n;
}

/** A JSON object (vLLM's dict-valued flags). */
export function parseJsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`'${text}' is not valid JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`'${text}' is not a JSON object`);
  return value as Record<string, unknown>;
}

/** A number > 0. */
export function parsePositiveNumber(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`'${text}' must be a positive number`);
  return n;
}
