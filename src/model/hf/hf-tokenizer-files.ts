// Tokenizer and chat template of a Hugging Face directory (tokenizer.json, tokenizer_config.json,
// chat_template.jinja / chat_template.json / tokenizer_config.chat_template, and the named
// variants in additional_chat_templates/).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chatTemplatesFromConfigValue, type ChatTemplateSources } from '../chat-template';
import { createTokenizerFromHfFiles } from '../tokenizer';
import type { Tokenizer } from '../types';

type Json = Record<string, unknown>;

export function readJsonFile(path: string): Json | null {
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Json;
  } catch (err) {
    throw new Error(`${path}: invalid JSON (${(err as Error).message})`);
  }
}

export function readTokenizerConfig(dir: string): Json | null {
  return readJsonFile(join(dir, 'tokenizer_config.json'));
}

export function loadHfTokenizer(dir: string, tokenizerConfig: Json | null): Tokenizer {
  const tokenizerJson = readJsonFile(join(dir, 'tokenizer.json'));
  if (!tokenizerJson) {
    throw new Error(`${dir}: no tokenizer.json (only the fast-tokenizer format is supported; use --skip-tokenizer-init to serve token ids)`);
  }
  return createTokenizerFromHfFiles(tokenizerJson, tokenizerConfig);
}

/**
 * The model's own templates: chat_template.jinja, then chat_template.json, then
 * tokenizer_config.json; named variants (`tool_use`, ...) from those lists and from
 * additional_chat_templates/<name>.jinja.
 */
export function hfChatTemplateSources(dir: string, tokenizerConfig: Json | null): ChatTemplateSources {
  const jinja = join(dir, 'chat_template.jinja');
  let sources: ChatTemplateSources;
  if (existsSync(jinja)) {
    sources = { default: readFileSync(jinja, 'utf8'), named: {} };
  } else {
    const json = readJsonFile(join(dir, 'chat_template.json'));
    const fromJson = json ? chatTemplatesFromConfigValue(json.chat_template) : null;
    sources = fromJson && (fromJson.default !== null || Object.keys(fromJson.named).length > 0)
      ? fromJson
      : chatTemplatesFromConfigValue(tokenizerConfig?.chat_template);
  }
  const extra = join(dir, 'additional_chat_templates');
  if (existsSync(extra)) {
    for (const file of readdirSync(extra)) {
      if (file.endsWith('.jinja')) sources.named[file.slice(0, -'.jinja'.length)] = readFileSync(join(extra, file), 'utf8');
    }
  }
  return sources;
}
