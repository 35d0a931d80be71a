// How many tokens a request may generate, resolved against --max-model-len as vLLM's
// get_max_tokens does, with vLLM's error messages (both numbers named).

import { PromptTooLongError, RequestValidationError } from '../engine/errors';

export interface MaxTokensInput {
  /** The value the caller sent (max_completion_tokens wins over max_tokens for chat), or null. */
  requested: number | null;
  /** Field name the caller used, for `param`. */
  param: 'max_tokens' | 'max_completion_tokens' | 'max_output_tokens';
  /** Used when the caller sent nothing: 16 for completions, null (= to the context limit) for chat. */
  endpointDefault: number | null;
  /** generation_config.json max_new_tokens: a cap, as vLLM applies it. */
  generationConfigMax: number | null | undefined;
  promptLength: number;
  maxModelLen: number;
  /** Name of the prompt field for the prompt-too-long error ('prompt' or 'messages'). */
  promptParam: string;
}

export function checkPromptLength(promptLength: number, maxModelLen: number, promptParam: string): void {
  if (promptLength >= maxModelLen) {
    throw new RequestValidationError(
      `This model's maximum context length is ${maxModelLen} tokens. However, your request has ` +
        `${promptLength} input tokens. Please reduce the length of the input messages.`,
      promptParam,
    );
  }
}

/**
 * `work` (tokenizing with --max-model-len as the token limit), with a prompt refused after a
 * prefix answered as vLLM answers a long prompt, its count given as a lower bound.
 */
export async function refusingLongPrompts<T>(work: Promise<T>, maxModelLen: number, promptParam: string): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (!(err instanceof PromptTooLongError)) throw err;
    throw new RequestValidationError(
      `This model's maximum context length is ${maxModelLen} tokens. However, your request has at least ` +
        `${err.atLeast} input tokens. Please reduce the length of the input messages.`,
      promptParam,
    );
  }
}

export function resolveMaxTokens(input: MaxTokensInput): number {
  const { requested, promptLength, maxModelLen } = input;
  checkPromptLength(promptLength, maxModelLen, input.promptParam);
  const room = maxModelLen - promptLength;
  if (requested !== null && requested > room) {
    throw new RequestValidationError(
      `'max_tokens' or 'max_completion_tokens' is too large: ${requested}. This model's maximum ` +
        `context length is ${maxModelLen} tokens and your request has ${promptLength} input tokens ` +
        `(${requested} > ${maxModelLen} - ${promptLength}).`,
      input.param,
    );
  }
  const candidates = [room, requested ?? input.endpointDefault, input.generationConfigMax];
  return Math.min(...candidates.filter((v): v is number => typeof v === 'number'));
}
