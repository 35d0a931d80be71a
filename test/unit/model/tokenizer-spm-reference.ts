// An independent SentencePiece-BPE encoder written after llama.cpp's llm_tokenizer_spm
// (merge the best-scoring adjacent pair whose concatenation is a vocabulary entry, leftmost on
// ties; characters left outside the vocabulary become <0xNN> byte tokens). Tests compare the
// tokenizer.json route against it.

interface Symbol { text: string; prev: number; next: number; }
interface Bigram { left: number; right: number; score: number; size: number; }

export class SentencePieceReference {
  private readonly ids = new Map<string, number>();

  constructor(tokens: string[], private readonly scores: number[], private readonly addSpacePrefix = true) {
    tokens.forEach((t, i) => { if (!this.ids.has(t)) this.ids.set(t, i); });
  }

  encode(text: string): number[] {
    const normalized = (this.addSpacePrefix ? ' ' + text : text).replace(/ /g, '\u2581');
    const chars = Array.from(normalized);
    const symbols: Symbol[] = chars.map((ch, i) => ({ text: ch, prev: i - 1, next: i + 1 < chars.length ? i + 1 : -1 }));
    const queue: Bigram[] = [];
    const tryAdd = (left: number, right: number) => {
      if (left < 0 || right < 0) return;
      const merged = symbols[left].text + symbols[right].text;
      const id = this.ids.get(merged);
      if (id === undefined) return;
      queue.push({ left, right, score: this.scores[id], size: merged.length });
    };
    for (let i = 1; i < symbols.length; i++) tryAdd(i - 1, i);
    const better = (a: Bigram, b: Bigram) => a.score > b.score || (a.score === b.score && a.left < b.left);
    while (queue.length > 0) {
      let best = 0;
      for (let i = 1; i < queue.length; i++) if (better(queue[i], queue[best])) best = i;
      const bigram = queue.splice(best, 1)[0];
      const left = symbols[bigram.left];
      const right = symbols[bigram.right];
      if (left.text.length === 0 || right.text.length === 0 || left.text.length + right.text.length !== bigram.size) continue;
      left.text += right.text;
      right.text = '';
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = bigram.left;
      tryAdd(left.prev, bigram.left);
      tryAdd(bigram.left, left.next);
    }
    const out: number[] = [];
    for (let i = 0; i >= 0 && i < symbols.length; i = symbols[i].next) {
      const id = this.ids.get(symbols[i].text);
      if (id !== undefined) {
        out.push(id);
        continue;
      }
      for (const byte of Buffer.from(symbols[i].text, 'utf8')) {
        out.push(this.ids.get(`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`)!);
      }
    }
    return out;
  }
}
