// Completion prompts: string | string[] | int[] | int[][] -> token ids, with add_special_tokens,
// truncate_prompt_tokens / truncation_side, vocabulary and emptiness checks.

import { RequestValidationError } from '../engine/errors';
import type { TextProcessor } from '../engine/types';
import { refusingLongPrompts } from './max-tokens';

export interface PreparedPrompt {
  /** Prompt text when the caller sent text (or it was decoded for echo); null for token-id prompts. */
  text: string | null;
  tokenIds: number[];
}

export interface PromptTokenOptions {
  addSpecialTokens: boolean;
  /** -1 = max_model_len; null = no truncation. */
  truncatePromptTokens: number | null;
  truncationSide: 'left' | 'right' | null;
  maxModelLen: number;
  vocabSize: number;
}

function isTokenList(value: unknown): value is number[] {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'number');
}

/** How many prompts (engine requests) the `prompt` field holds. */
export function countCompletionPrompts(prompt: unknown): number {
  return splitCompletionPrompt(prompt).length;
}

/** Splits the `prompt` field (or the embeddings' `input`) into one entry per prompt, keeping each entry's form. */
export function splitCompletionPrompt(prompt: unknown, param = 'prompt'): Array<string | number[]> {
  if (typeof prompt === 'string') return [prompt];
  if (isTokenList(prompt)) return [prompt];
  if (Array.isArray(prompt) && prompt.length > 0) {
    if (prompt.every((p) => typeof p === 'string')) return prompt;
    if (prompt.every((p) => isTokenList(p))) return prompt;
  }
  if (Array.isArray(prompt) && prompt.length === 0) {
    throw new RequestValidationError(`${param} cannot be empty.`, param);
  }
  throw new RequestValidationError(
    `${param} must be a string, an array of strings, an array of token ids or an array of token-id arrays.`,
    param,
  );
}

export function resolveTruncation(truncate: number | null, maxModelLen: number): number | null {
  if (truncate === null) return null;
  if (truncate === -1) return maxModelLen;
  if (!Number.isInteger(truncate) || truncate < -1) {
    throw new RequestValidationError(`truncate_prompt_tokens must be >= -1, got ${truncate}.`, 'truncate_prompt_tokens');
  }
  if (truncate > maxModelLen) {
    throw new RequestValidationError(
      `truncate_prompt_tokens value (${truncate}) is greater than max_model_len (${maxModelLen}). ` +
        'Please, select a smaller truncation size.',
      'truncate_prompt_tokens',
    );
  }
  return truncate;
}

/** Keeps `limit` tokens: the last ones by default ('left' truncation, as vLLM), the first with 'right'. */
export function truncateTokens(ids: number[], limit: number | null, side: 'left' | 'right' | null): number[] {
  if (limit === null || ids.length <= limit) return ids;
  return side === 'right' ? ids.slice(0, limit) : ids.slice(ids.length - limit);
}

export function checkTokenIdsInVocab(ids: readonly number[], vocabSize: number, param: string): void {
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new RequestValidationError(`Token id ${id} is out of vocabulary (vocab size ${vocabSize}).`, param);
    }
  }
}

/** Text input needs a tokenizer, which --skip-tokenizer-init leaves out. */
export function requireTokenizer(text: TextProcessor | null, param: string): TextProcessor {
  if (!text) {
    throw new RequestValidationError('Text prompts need a tokenizer; this server runs without one (send token ids).', param);
  }
  return text;
}

/** Each prompt's token ids: text prompts are tokenized together (off the HTTP thread when large). */
export async function prepareCompletionPrompts(
  prompt: unknown,
  text: TextProcessor | null,
  opts: PromptTokenOptions,
): Promise<PreparedPrompt[]> {
  const limit = resolveTruncation(opts.truncatePromptTokens, opts.maxModelLen);
  const entries = splitCompletionPrompt(prompt);
  const texts = entries.filter((entry): entry is string => typeof entry === 'string');
  // Without truncation a prompt of max_model_len tokens or more is refused, so tokenizing may stop early.
  const tokenLimit = limit === null ? opts.maxModelLen : null;
  const encoded = texts.length > 0
    ? await refusingLongPrompts(requireTokenizer(text, 'prompt').encode(texts, opts.addSpecialTokens, tokenLimit), opts.maxModelLen, 'prompt')
    : [];
  let next = 0;
  return entries.map((entry) => {
    const isText = typeof entry === 'string';
    const fullIds = isText ? encoded[next++] : entry;
    if (!isText) checkTokenIdsInVocab(fullIds, opts.vocabSize, 'prompt');
    const tokenIds = truncateTokens(fullIds, limit, opts.truncationSide);
    if (tokenIds.length === 0) throw new RequestValidationError('The decoder prompt cannot be empty.', 'prompt');
    // Truncated text prompts are echoed as the tokens actually used, like vLLM.
    return { text: isText && tokenIds === fullIds ? entry : null, tokenIds };
  });
}
