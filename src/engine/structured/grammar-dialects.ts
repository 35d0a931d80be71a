// The grammar spellings clients send in `structured_outputs.grammar`, turned into the EBNF
// xgrammar parses:
//   - xgrammar EBNF (`rule ::= …`, the GBNF family): passed on, with the two GBNF habits
//     xgrammar does not take rewritten: an empty alternative (`ws ::= | " "`) becomes `""`,
//     and `.` (any character, llama.cpp) becomes a character class;
//   - Lark (`start: …`, as vLLM also accepts): rules rewritten to `::=`, `start` as the root.

/** Any Unicode code point, the meaning of GBNF's `.`. */
const ANY_CHAR = '[\\u0000-\\U0010FFFF]';

/** True when the text reads like Lark (`name: …` rules) rather than EBNF (`name ::= …`). */
export function looksLikeLark(grammar: string): boolean {
  if (grammar.includes('::=')) return false;
  return grammar.split('\n').some((line) => /^\s*[?!]?[A-Za-z_][\w-]*\s*:/.test(stripLarkComment(line)));
}

/** Grammar text (EBNF / GBNF / Lark) → EBNF for xgrammar; throws Error for Lark features it cannot express. */
export function toXgrammarEbnf(grammar: string): string {
  return looksLikeLark(grammar) ? larkToEbnf(grammar) : gbnfToEbnf(grammar);
}

/**
 * Rewrites the GBNF-only spellings. A small scanner keeps string literals, character classes
 * and comments verbatim, so only grammar structure is touched.
 */
export function gbnfToEbnf(grammar: string): string {
  let out = '';
  // The last structural token: an empty alternative follows '::=', '|' or '(' and precedes '|', ')' or a rule's end.
  let last: 'start' | 'element' = 'element';
  const markEmptyIfNeeded = () => {
    // Right after the '::=' / '|' / '(' it stands for, before the whitespace that followed.
    if (last === 'start') out = out.replace(/(\s*)$/, '""$1');
  };
  let i = 0;
  while (i < grammar.length) {
    const ch = grammar[i];
    if (ch === '"' || ch === '[') {
      const end = scanDelimited(grammar, i, ch === '"' ? '"' : ']');
      out += grammar.slice(i, end);
      i = end;
      last = 'element';
      continue;
    }
    if (ch === '#') {
      const end = grammar.indexOf('\n', i);
      i = end < 0 ? grammar.length : end;
      continue;
    }
    if (grammar.startsWith('::=', i)) {
      out += '::=';
      i += 3;
      last = 'start';
      continue;
    }
    if (ch === '|' || ch === ')') {
      markEmptyIfNeeded();
      out += ch;
      i++;
      last = ch === '|' ? 'start' : 'element';
      continue;
    }
    if (ch === '(') {
      out += ch;
      i++;
      last = 'start';
      continue;
    }
    if (ch === '.') {
      out += ANY_CHAR;
      i++;
      last = 'element';
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      const match = /^[A-Za-z_][\w-]*/.exec(grammar.slice(i))![0];
      // A name followed by '::=' starts the next rule: the previous rule may end empty.
      if (/^\s*::=/.test(grammar.slice(i + match.length))) markEmptyIfNeeded();
      out += match;
      i += match.length;
      last = 'element';
      continue;
    }
    if (!/\s/.test(ch)) last = 'element';
    out += ch;
    i++;
  }
  markEmptyIfNeeded();
  return out;
}

/** End index (exclusive) of the literal or class starting at `start`, honouring backslash escapes. */
function scanDelimited(text: string, start: number, close: string): number {
  let i = start + 1;
  while (i < text.length && text[i] !== close) i += text[i] === '\\' ? 2 : 1;
  return Math.min(i + 1, text.length);
}

function stripLarkComment(line: string): string {
  let inString: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === inString) inString = null;
    } else if (ch === '"' || ch === "'") {
      inString = ch;
    } else if (line.startsWith('//', i) || ch === '#') {
      return line.slice(0, i);
    }
  }
  return line;
}

/** Lark → EBNF: `name: a | b` (continuation lines start with `|`), 'x' → "x", start → root. */
export function larkToEbnf(grammar: string): string {
  const rules: Array<{ name: string; body: string }> = [];
  for (const raw of grammar.split('\n')) {
    const line = stripLarkComment(raw).trim();
    if (line === '' || line.startsWith('%')) continue; // %import / %ignore directives have no EBNF meaning here
    const rule = /^[?!]?([A-Za-z_][\w-]*)\s*(?:\.\d+)?\s*:(.*)$/.exec(line);
    if (rule) {
      rules.push({ name: rule[1], body: rule[2].trim() });
    } else if (line.startsWith('|') && rules.length > 0) {
      rules[rules.length - 1].body += ` ${line}`;
    } else {
      throw new Error(`cannot read Lark line: ${JSON.stringify(raw.trim())}`);
    }
  }
  if (!rules.some((r) => r.name === 'start')) throw new Error('a Lark grammar needs a `start` rule.');
  const lines = rules.map(({ name, body }) => `${name === 'start' ? 'root' : name} ::= ${larkBody(body)}`);
  return gbnfToEbnf(lines.join('\n'));
}

function larkBody(body: string): string {
  let out = '';
  for (let i = 0; i < body.length; ) {
    const ch = body[i];
    if (ch === '"' || ch === "'") {
      const end = scanDelimited(body, i, ch);
      const inner = body.slice(i + 1, end - 1);
      out += `"${ch === "'" ? inner.replace(/\\'/g, "'").replace(/"/g, '\\"') : inner}"`;
      i = end;
      continue;
    }
    if (ch === '[') {
      // Lark's [x] is "optional x".
      out += '(';
      i++;
      continue;
    }
    if (ch === ']') {
      out += ')?';
      i++;
      continue;
    }
    if (ch === '/') throw new Error('Lark regular expressions (/…/) are not supported; use EBNF character classes.');
    const word = /^[A-Za-z_][\w-]*/.exec(body.slice(i));
    if (word) {
      out += word[0] === 'start' ? 'root' : word[0];
      i += word[0].length;
      continue;
    }
    out += ch;
    i++;
  }
  return out;
}
