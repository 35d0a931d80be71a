// The serve flag table of docs/serve-flags.md, built from the flag tables themselves: (a)
// SERVER_FLAGS, (b)/(c) VLLM_FLAG_POLICY. `npm run -s flag-table` prints it; a test checks the
// page holds it verbatim.

import { SERVER_FLAGS } from './server-flags';
import { VLLM_FLAG_POLICY } from './vllm-flag-policy';

/** A Markdown table cell: a `|` inside would end the cell. */
const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** The Markdown table of every serve flag and its policy, one row per flag, ending in a newline. */
export function flagTableMarkdown(): string {
  const rows = ['| Flag | Policy | Default | Meaning |', '|---|---|---|---|'];
  for (const f of SERVER_FLAGS) {
    rows.push(`| \`${f.flags}\` | (a) | ${cell(f.defaultText ?? '')} | ${cell(f.description)}${f.choices ? ` (${f.choices.join(', ')})` : ''} |`);
  }
  for (const p of VLLM_FLAG_POLICY) {
    const aliases = p.aliases ? ` (${p.aliases.map((a) => `\`${a}\``).join(', ')})` : '';
    const text =
      p.status === 'no-effect'
        ? `No effect: ${p.why}`
        : `${p.harmless ? 'Refused unless harmless (then no effect)' : 'Refused'}: ${p.why}. Instead: ${p.instead}`;
    rows.push(`| \`${p.flags}\`${aliases} | ${p.status === 'no-effect' ? '(b)' : '(c)'} |  | ${cell(text)} |`);
  }
  return `${rows.join('\n')}\n`;
}
