// OpenAI `usage` objects, with vLLM's optional prompt_tokens_details.cached_tokens.

export interface PromptTokensDetails {
  cached_tokens: number;
}

export interface CompletionTokensDetails {
  reasoning_tokens: number;
}

export interface UsageInfo {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: PromptTokensDetails | null;
  /** With --reasoning-parser: how many output tokens were thinking. */
  completion_tokens_details?: CompletionTokensDetails | null;
}

export interface UsageOptions {
  /** --enable-prompt-tokens-details */
  enablePromptTokensDetails: boolean;
}

export function buildUsage(
  promptTokens: number,
  completionTokens: number,
  cachedTokens: number,
  opts: UsageOptions,
): UsageInfo {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: opts.enablePromptTokensDetails ? { cached_tokens: cachedTokens } : null,
  };
}

/** Sums usages (batch chat: one usage over all conversations). */
export function sumUsage(usages: UsageInfo[], opts: UsageOptions): UsageInfo {
  let prompt = 0;
  let completion = 0;
  let cached = 0;
  let reasoning: number | null = null;
  for (const u of usages) {
    prompt += u.prompt_tokens;
    completion += u.completion_tokens;
    cached += u.prompt_tokens_details?.cached_tokens ?? 0;
    if (u.completion_tokens_details) reasoning = (reasoning ?? 0) + u.completion_tokens_details.reasoning_tokens;
  }
  const usage = buildUsage(prompt, completion, cached, opts);
  if (reasoning !== null) usage.completion_tokens_details = { reasoning_tokens: reasoning };
  return usage;
}

/** stream_options as sent; whether a usage chunk / per-chunk usage is due. */
export interface StreamOptions {
  include_usage?: boolean | null;
  continuous_usage_stats?: boolean | null;
}

export function streamUsageFlags(
  streamOptions: StreamOptions | null | undefined,
  forceIncludeUsage: boolean,
): { includeUsage: boolean; continuousUsage: boolean } {
  const includeUsage = forceIncludeUsage || !!streamOptions?.include_usage;
  return { includeUsage, continuousUsage: includeUsage && !!streamOptions?.continuous_usage_stats };
}
