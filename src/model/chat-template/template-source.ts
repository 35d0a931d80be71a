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

/** A model's chat templates: the default one and its named variants ('tool_use', ...). */
export interface ChatTemplateSources {
  default: string | null;
  named: Record<string, string>;
}

export const NO_CHAT_TEMPLATES: ChatTemplateSources = { default: null, named: {} };

/**
 * --chat-template: the contents of the file when the value names one, the model's template of
 * that name (e.g. `tool_use`), else the value itself as an inline template (with backslash
 * escapes decoded, as vLLM does). A value without any Jinja character ('{', '}', newline) that
 * is neither is a mistyped path: that throws.
 */
export function resolveChatTemplateSource(flagValue: string | null, modelTemplates: Record<string, string> = {}): string | null {
  if (flagValue === null || flagValue === '') return null;
  if (isFile(flagValue)) return readFileSync(flagValue, 'utf8');
  if (Object.hasOwn(modelTemplates, flagValue)) return modelTemplates[flagValue];
  if (!/[{}\n]/.test(flagValue)) {
    throw new Error(`The supplied chat template (${flagValue}) looks like a file path, but it failed to be opened`);
  }
  return decodeUnicodeEscapes(flagValue);
}

/**
 * The templates in a tokenizer_config.json / chat_template.json `chat_template` value: a string,
 * or a list of {name, template} where 'default' is used without tools and 'tool_use' with them
 * (as transformers picks them).
 */
export function chatTemplatesFromConfigValue(value: unknown): ChatTemplateSources {
  if (typeof value === 'string') return { default: value, named: {} };
  if (!Array.isArray(value)) return NO_CHAT_TEMPLATES;
  const named: Record<string, string> = {};
  for (const entry of value as { name?: unknown; template?: unknown }[]) {
    if (entry && typeof entry.name === 'string' && typeof entry.template === 'string') named[entry.name] = entry.template;
  }
  const { default: fallback = null, ...variants } = named;
  return { default: fallback, named: variants };
}
