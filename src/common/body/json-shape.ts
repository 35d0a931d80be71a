// Checks the shape of a JSON text as it arrives, chunk by chunk, before anything parses it:
// nesting depth, keys per object, items per array and characters per string. Each chunk costs
// time linear in its length (strings are skipped with a native regex search), so a hostile body
// is refused after the chunk that breaks a limit, long before JSON.parse, validation or any
// quadratic work downstream could run on it. It does not check the syntax: JSON.parse does, on
// bodies that passed.

export interface JsonLimits {
  /** Deepest nesting of objects and arrays. */
  maxDepth: number;
  /** Most keys in one object. */
  maxObjectKeys: number;
  /** Most items in one array. */
  maxArrayLength: number;
  /** Longest string (keys included), in characters as sent (escapes count as written). */
  maxStringLength: number;
}

/** A limit the text broke; `limit` names the flag's subject for the message. */
export class JsonShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonShapeError';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/** The next `"` or `\` from a position, found natively. */
const STRING_STOP = /["\\]/g;

interface Container {
  isObject: boolean;
  /** Items (arrays) or members (objects) started so far. */
  count: number;
  /** No item has started since the opening bracket or the last comma. */
  awaitingItem: boolean;
}

/**
 * Where an array that is the value of a top-level member lies in the text: its brackets and the
 * commas between its items (offsets in the whole text). json-slices.ts parses such arrays a slice
 * of items at a time.
 */
export interface MemberArray {
  open: number;
  close: number;
  commas: number[];
}

export class JsonShapeScanner {
  private readonly stack: Container[] = [];
  /** Offset of the current chunk in the whole text. */
  private offset = 0;
  /** Arrays that are values of the top-level object's members, closed or still open. */
  readonly memberArrays: MemberArray[] = [];
  private inString = false;
  /** Inside a string, the previous chunk ended on a backslash: the next character is escaped. */
  private pendingEscape = false;
  private stringLength = 0;

  constructor(private readonly limits: JsonLimits) {}

  /** Scans the next piece of the text; throws JsonShapeError at the first broken limit. */
  feed(text: string): void {
    let i = 0;
    const n = text.length;
    while (i < n) {
      if (this.inString) {
        i = this.scanString(text, i);
        continue;
      }
      const code = text.charCodeAt(i);
      if (isWhitespace(code)) {
        i++;
        continue;
      }
      const top = this.stack.length > 0 ? this.stack[this.stack.length - 1] : null;
      if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
        if (this.inMemberArray()) this.memberArrays[this.memberArrays.length - 1].close = this.offset + i;
        this.stack.pop();
        i++;
        continue;
      }
      if (code === COMMA) {
        if (this.inMemberArray()) this.memberArrays[this.memberArrays.length - 1].commas.push(this.offset + i);
        if (top) top.awaitingItem = true;
        i++;
        continue;
      }
      // Anything else starts an item of the enclosing container (a value, or an object's key).
      if (top?.awaitingItem) this.countItem(top);
      if (code === QUOTE) {
        this.inString = true;
        this.stringLength = 0;
        i++;
      } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
        this.open(code === OPEN_OBJECT);
        if (this.inMemberArray()) this.memberArrays.push({ open: this.offset + i, close: -1, commas: [] });
        i++;
      } else {
        // Numbers, literals and the ':' of an object member: nothing to count.
        i++;
      }
    }
    this.offset += n;
  }

  /** The innermost container is an array that is a top-level member's value. */
  private inMemberArray(): boolean {
    return this.stack.length === 2 && this.stack[0].isObject && !this.stack[1].isObject;
  }

  private countItem(container: Container): void {
    container.awaitingItem = false;
    container.count++;
    if (container.isObject) {
      if (container.count > this.limits.maxObjectKeys) {
        throw new JsonShapeError(`A JSON object has more than ${this.limits.maxObjectKeys} keys (--max-json-object-keys).`);
      }
    } else if (container.count > this.limits.maxArrayLength) {
      throw new JsonShapeError(`A JSON array has more than ${this.limits.maxArrayLength} items (--max-json-array-length).`);
    }
  }

  private open(isObject: boolean): void {
    if (this.stack.length >= this.limits.maxDepth) {
      throw new JsonShapeError(`The JSON body nests deeper than ${this.limits.maxDepth} levels (--max-json-depth).`);
    }
    this.stack.push({ isObject, count: 0, awaitingItem: true });
  }

  /** Inside a string from `start`: returns where scanning continues. */
  private scanString(text: string, start: number): number {
    let i = start;
    if (this.pendingEscape) {
      this.pendingEscape = false;
      this.grow(1);
      i++;
    }
    STRING_STOP.lastIndex = i;
    for (;;) {
      const match = STRING_STOP.exec(text);
      if (match === null) {
        this.grow(text.length - i);
        return text.length;
      }
      const at = match.index;
      this.grow(at - i);
      if (text.charCodeAt(at) === BACKSLASH) {
        if (at + 1 >= text.length) {
          this.grow(1);
          this.pendingEscape = true;
          return text.length;
        }
        this.grow(2);
        i = at + 2;
        STRING_STOP.lastIndex = i;
        continue;
      }
      this.inString = false;
      return at + 1;
    }
  }

  private grow(chars: number): void {
    this.stringLength += chars;
    if (this.stringLength > this.limits.maxStringLength) {
      throw new JsonShapeError(`A JSON string is longer than ${this.limits.maxStringLength} characters (--max-json-string-length).`);
    }
  }
}

/** Scans a whole text at once (tests, small bodies). */
export function checkJsonShape(text: string, limits: JsonLimits): void {
  new JsonShapeScanner(limits).feed(text);
}
