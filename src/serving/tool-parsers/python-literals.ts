// A reader for the Python subset pythonic tool calls are written in: `[f(a=1, b='x'), g()]`
// with literal arguments (strings, numbers, True/False/None, lists, tuples, dicts). It reads
// call by call and says how far it got, so a stream can send each call once its ')' arrives.

export class IncompleteInput extends Error {}
export class MalformedInput extends Error {}

export interface PythonCall {
  name: string;
  /** Null until the call's closing ')' is read. */
  args: Record<string, unknown> | null;
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', v: '\v', a: '\x07', '0': '\0', '\\': '\\', "'": "'", '"': '"', '\n': '' };

export class PythonCallReader {
  private i: number;

  constructor(private readonly text: string, start: number) {
    this.i = start;
  }

  get position(): number {
    return this.i;
  }

  /** Reads `[call, ...]` into `calls`: a call is added once its name is read and gets `args` at its ')'. */
  readCallList(calls: PythonCall[]): void {
    this.expect('[');
    this.items(']', () => this.readCall(calls));
  }

  private readCall(calls: PythonCall[]): void {
    const name = this.identifier();
    this.ws();
    this.expect('(');
    const call: PythonCall = { name, args: null };
    calls.push(call);
    const args: Record<string, unknown> = {};
    this.items(')', () => {
      const key = this.identifier();
      this.ws();
      this.expect('=');
      this.ws();
      args[key] = this.value();
    });
    call.args = args;
  }

  /** Reads comma-separated items up to and including `close` (a trailing comma is allowed). */
  private items(close: string, readItem: () => void): void {
    this.ws();
    while (this.peek() !== close) {
      readItem();
      this.ws();
      if (this.peek() === ',') {
        this.i++;
        this.ws();
      } else if (this.peek() !== close) {
        throw new MalformedInput(`expected ',' or '${close}' at ${this.i}`);
      }
    }
    this.i++;
  }

  private value(): unknown {
    const c = this.peek();
    if (c === '"' || c === "'") return this.string();
    if (c === '[') return this.sequence('[', ']');
    if (c === '(') return this.sequence('(', ')');
    if (c === '{') return this.dict();
    if (c === '-' || c === '+' || c === '.' || (c >= '0' && c <= '9')) return this.number();
    const word = this.identifier();
    if (word === 'True') return true;
    if (word === 'False') return false;
    if (word === 'None') return null;
    throw new MalformedInput(`arguments must be literals, got '${word}'`);
  }

  private sequence(open: string, close: string): unknown[] {
    this.expect(open);
    const values: unknown[] = [];
    this.items(close, () => values.push(this.value()));
    return values;
  }

  private dict(): Record<string, unknown> {
    this.expect('{');
    const out: Record<string, unknown> = {};
    this.items('}', () => {
      const key = this.value();
      if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'boolean') {
        throw new MalformedInput('dict keys must be literals');
      }
      this.ws();
      this.expect(':');
      this.ws();
      out[String(key)] = this.value();
    });
    return out;
  }

  private number(): number {
    const match = /^[+-]?(\d[\d_]*)?(\.\d*)?([eE][+-]?\d+)?/.exec(this.text.slice(this.i));
    const literal = match?.[0] ?? '';
    if (this.i + literal.length >= this.text.length) throw new IncompleteInput();
    const value = Number(literal.replace(/_/g, ''));
    if (literal === '' || !Number.isFinite(value)) throw new MalformedInput(`bad number at ${this.i}`);
    this.i += literal.length;
    return value;
  }

  private string(): string {
    const quote = this.peek();
    const triple = this.text.startsWith(quote.repeat(3), this.i);
    const delimiter = triple ? quote.repeat(3) : quote;
    this.i += delimiter.length;
    let out = '';
    for (;;) {
      if (this.i >= this.text.length) throw new IncompleteInput();
      if (this.text.startsWith(delimiter, this.i)) {
        this.i += delimiter.length;
        return out;
      }
      const c = this.text[this.i];
      if (c === '\n' && !triple) throw new MalformedInput('newline in a string');
      if (c !== '\\') {
        out += c;
        this.i++;
        continue;
      }
      out += this.escape();
    }
  }

  private escape(): string {
    const code = this.text[this.i + 1];
    if (code === undefined) throw new IncompleteInput();
    const hexLength = code === 'x' ? 2 : code === 'u' ? 4 : code === 'U' ? 8 : 0;
    if (hexLength > 0) {
      const hex = this.text.slice(this.i + 2, this.i + 2 + hexLength);
      if (hex.length < hexLength) throw new IncompleteInput();
      if (!/^[0-9a-fA-F]+$/.test(hex)) throw new MalformedInput('bad escape');
      this.i += 2 + hexLength;
      return String.fromCodePoint(parseInt(hex, 16));
    }
    this.i += 2;
    return ESCAPES[code] ?? `\\${code}`;
  }

  private identifier(): string {
    const match = /^[A-Za-z_][\w.]*/.exec(this.text.slice(this.i));
    if (!match) {
      if (this.i >= this.text.length) throw new IncompleteInput();
      throw new MalformedInput(`expected a name at ${this.i}`);
    }
    // A name running to the end of the text may still be growing.
    if (this.i + match[0].length >= this.text.length) throw new IncompleteInput();
    this.i += match[0].length;
    return match[0];
  }

  private ws(): void {
    while (this.i < this.text.length && /\s/.test(this.text[this.i])) this.i++;
  }

  private peek(): string {
    if (this.i >= this.text.length) throw new IncompleteInput();
    return this.text[this.i];
  }

  private expect(c: string): void {
    if (this.peek() !== c) throw new MalformedInput(`expected '${c}' at ${this.i}`);
    this.i++;
  }
}
