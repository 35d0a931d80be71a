#!/usr/bin/env node
// Prints README's serve flag table from the built flag tables (dist/): (a) SERVER_FLAGS,
// (b)/(c) VLLM_FLAG_POLICY. After adding a flag: `npm run build && npm run flag-table`, and paste
// the rows into README.md (a test checks every flag has its row).
'use strict';
const path = require('node:path');
const dist = path.join(__dirname, '..', 'dist', 'src', 'config');
const { SERVER_FLAGS } = require(path.join(dist, 'server-flags'));
const { VLLM_FLAG_POLICY } = require(path.join(dist, 'vllm-flag-policy'));

const cell = (s) => s.replace(/\|/g, '\\|');
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
process.stdout.write(`${rows.join('\n')}\n`);
