// Where a chat template's text comes from: the --chat-template flag, tokenizer_config.json, or
// the built-in template of the dummy model.

import { readFileSync, statSync } from 'node:fs';

/** ChatML, for the dummy model's built-in tokenizer (<|im_start|> / <|im_end|> are its special tokens). */
export const BUILTIN_CHAT_TEMPLATE =
  "{%- for message in messages %}"
  + "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
  + '{%- endfor %}'
  + "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Python's unicode_escape decoding, which vLLM applies to inline templates ("\\n" -> newline). */
function decodeUnicodeEscapes(text: string): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[0-7]{1,3}|[\\'"abfnrtv\n])/g,
    (whole, esc: string) => {
      switch (esc[0]) {
        case 'u': case 'U': case 'x': return String.fromCodePoint(parseInt(esc.slice(1), 16));
        case 'n': return '\n';
        case 't': return '\t';
        case 'r': return '\r';
        case 'a': return '\x07';
        case 'b': return '\b';
        case 'f': return '\f';
        case 'v': return '\v';
        case '\n': return '';
        case '\\': case "'": case '"': return esc;
        default: return /^[0-7]+$/.test(esc) ? String.fromCharCode(parseInt(esc, 8)) : whole;
      }
    });
}

/**
 * --chat-template: the contents of the file when the value names one, else the value itself as
 * an inline template (with backslash escapes decoded, as vLLM does). A value without any Jinja
 * character ('{', '}', newline) that is not a readable file is a mistyped path: that throws.
 */
export function resolveChatTemplateSource(flagValue: string | null): string | null {
  if (flagValue === null || flagValue === '') return null;
  if (isFile(flagValue)) return readFileSync(flagValue, 'utf8');
  if (!/[{}\n]/.test(flagValue)) {
    throw new Error(`The supplied chat template (${flagValue}) looks like a file path, but it failed to be opened`);
  }
  return decodeUnicodeEscapes(flagValue);
}

/**
 * The template in a tokenizer_config.json `chat_template` value: a string, or a list of
 * {name, template} of which transformers uses 'default' ('tool_use' when tools are given and it exists).
 */
export function chatTemplateFromTokenizerConfig(value: unknown, withTools = false): string | null {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return null;
  const named = new Map<string, string>();
  for (const entry of value as { name?: unknown; template?: unknown }[]) {
    if (entry && typeof entry.name === 'string' && typeof entry.template === 'string') named.set(entry.name, entry.template);
  }
  return (withTools ? named.get('tool_use') : undefined) ?? named.get('default') ?? null;
}
