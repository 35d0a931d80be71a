// A plain-TypeScript byte-level BPE (tiktoken / llama.cpp style) for the GGUF pre-tokenizer tests:
// the split regexes written as llama.cpp's llama-vocab.cpp adapts them (explicit case classes, no
// inline flags), a tiny BPE trainer that makes a vocabulary from a corpus, and an encoder that
// merges the lowest-ranked adjacent pair first. The server's ids are checked against this.

import { BYTE_TO_CHAR } from '../../src/model/tokenizer/byte-level';

/** Texts at the edges of the split regexes: digit runs, contractions, whitespace runs, CJK, newlines, case changes. */
export const EDGE_CASES = [
  'Numbers 1 12 123 1234 12345 3.14159 and 2026-12-05',
  "I'M sure you'LL see it's WE'VE they'd DON'T can't",
  'spaces   between\t\ttabs  \n\n  and trailing   ',
  'lines\r\nwith\r\n\r\ncarriage\n\n\nreturns\n',
  '中文测试：你好，世界！日本語のテキスト 한국어',
  'camelCase HTTPServer iPhone ALLCAPS MixedUP',
  'path/to/file.ts // comment\n/* block */\n',
  'emoji 🙂👍🏽 and accents naïve café cafe\u0301 Ωmega',
  '<html><body>x=1;y=2</body></html>',
  '   leading spaces and a final newline\n',
];
/** What the test vocabularies are learned from. */
export const EDGE_TRAINING = [...EDGE_CASES, 'the quick brown fox jumps over the lazy dog '.repeat(3), 'function add(a, b) { return a + b; }'];
const CONTRACTION = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const UPPER = '[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]';
const LOWER = '[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]';

export type ReferencePre = 'llama-bpe' | 'qwen2' | 'gpt-4o' | 'tekken' | 'gpt-2' | 'smollm';

const GPT2 = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)/gu;

/** Each pre-type's regexes, applied one after the other as llama.cpp does (text between matches stays a piece). */
export const REFERENCE_SPLITS: Record<ReferencePre, RegExp[]> = {
  'llama-bpe': [new RegExp(`${CONTRACTION}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`, 'gu')],
  qwen2: [new RegExp(`${CONTRACTION}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`, 'gu')],
  'gpt-4o': [new RegExp(`[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTION}?|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTION}?`
    + '|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+', 'gu')],
  tekken: [new RegExp(`[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+|[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*`
    + '|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+', 'gu')],
  'gpt-2': [GPT2],
  smollm: [/\p{N}/gu, GPT2],
};

/** How each pre-type treats its words (llama.cpp: ignore_merges for Llama 3; Qwen2's tokenizer.json normalizes NFC). */
export const REFERENCE_FLAGS: Record<ReferencePre, { ignoreMerges: boolean; nfc: boolean }> = {
  'llama-bpe': { ignoreMerges: true, nfc: false },
  qwen2: { ignoreMerges: false, nfc: true },
  'gpt-4o': { ignoreMerges: false, nfc: false },
  tekken: { ignoreMerges: true, nfc: false },
  'gpt-2': { ignoreMerges: false, nfc: false },
  smollm: { ignoreMerges: false, nfc: false },
};

/** The matches of `re` in `text` and the text between them, in order. */
function splitKeepingGaps(text: string, re: RegExp): string[] {
  const pieces: string[] = [];
  let at = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > at) pieces.push(text.slice(at, m.index));
    pieces.push(m[0]);
    at = m.index + m[0].length;
  }
  if (at < text.length) pieces.push(text.slice(at));
  return pieces;
}

export function splitWords(text: string, pre: ReferencePre): string[] {
  return REFERENCE_SPLITS[pre].reduce((pieces, re) => pieces.flatMap((piece) => splitKeepingGaps(piece, re)), [text]);
}

/** A word's UTF-8 bytes as GPT-2 byte characters, one symbol each. */
function byteSymbols(word: string): string[] {
  return Array.from(Buffer.from(word, 'utf8'), (b) => BYTE_TO_CHAR[b]);
}

/** Learns `count` merges from `corpus` (most frequent adjacent pair first, ties by first seen). */
export function trainMerges(corpus: string[], pre: ReferencePre, count: number): [string, string][] {
  let words = corpus.flatMap((line) => splitWords(line, pre)).map(byteSymbols);
  const merges: [string, string][] = [];
  while (merges.length < count) {
    const counts = new Map<string, number>();
    for (const w of words) for (let i = 0; i + 1 < w.length; i++) {
      const key = `${w[i]} ${w[i + 1]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    let best: string | null = null;
    for (const [key, n] of counts) if (best === null || n > counts.get(best)!) best = key;
    if (best === null) break;
    const [left, right] = best.split(' ') as [string, string];
    merges.push([left, right]);
    words = words.map((w) => mergePair(w, left, right));
  }
  return merges;
}

function mergePair(symbols: string[], left: string, right: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (i + 1 < symbols.length && symbols[i] === left && symbols[i + 1] === right) {
      out.push(left + right);
      i++;
    } else {
      out.push(symbols[i]);
    }
  }
  return out;
}

/** The vocabulary of `merges`: the 256 byte characters, then each merge's result in order. */
export function vocabularyOf(merges: [string, string][]): string[] {
  const tokens = [...BYTE_TO_CHAR];
  const seen = new Set(tokens);
  for (const [l, r] of merges) if (!seen.has(l + r)) { seen.add(l + r); tokens.push(l + r); }
  return tokens;
}

export class ByteLevelBpeReference {
  private readonly rank = new Map<string, number>();
  private readonly ids = new Map<string, number>();

  constructor(tokens: string[], merges: [string, string][], private readonly pre: ReferencePre) {
    merges.forEach(([l, r], i) => this.rank.set(`${l} ${r}`, i));
    tokens.forEach((t, i) => this.ids.set(t, i));
  }

  encode(text: string): number[] {
    const flags = REFERENCE_FLAGS[this.pre];
    const input = flags.nfc ? text.normalize('NFC') : text;
    return splitWords(input, this.pre).flatMap((word) => {
      const whole = byteSymbols(word).join('');
      if (flags.ignoreMerges && this.ids.has(whole)) return [this.ids.get(whole)!];
      return this.bpe(byteSymbols(word)).map((s) => this.ids.get(s)!);
    });
  }

  private bpe(symbols: string[]): string[] {
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const r = this.rank.get(`${symbols[i]} ${symbols[i + 1]}`);
        if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
      }
      if (best < 0) return symbols;
      symbols = [...symbols.slice(0, best), symbols[best] + symbols[best + 1], ...symbols.slice(best + 2)];
    }
  }
}
