// Tokenizer and chat template of a Hugging Face directory (tokenizer.json, tokenizer_config.json,
// chat_template.jinja / chat_template.json / tokenizer_config.chat_template).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chatTemplateFromTokenizerConfig } from '../chat-template';
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

/** The model's own template: chat_template.jinja, then chat_template.json, then tokenizer_config.json. */
export function hfChatTemplateSource(dir: string, tokenizerConfig: Json | null): string | null {
  const jinja = join(dir, 'chat_template.jinja');
  if (existsSync(jinja)) return readFileSync(jinja, 'utf8');
  const json = readJsonFile(join(dir, 'chat_template.json'));
  const fromJson = json ? chatTemplateFromTokenizerConfig(json.chat_template) : null;
  return fromJson ?? chatTemplateFromTokenizerConfig(tokenizerConfig?.chat_template);
}
