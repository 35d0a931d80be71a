// usage.completion_tokens_details.reasoning_tokens: how many output tokens it took to get past
// the reasoning section, found by decoding growing prefixes of the output (binary search).

import type { Tokenizer } from '../../model/types';

export function countReasoningTokens(
  tokenizer: Tokenizer,
  tokenIds: readonly number[],
  reasoningEnd: number,
  skipSpecialTokens: boolean,
): number {
  if (reasoningEnd <= 0) return 0;
  let low = 0;
  let high = tokenIds.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (tokenizer.decode(tokenIds.slice(0, mid), { skipSpecialTokens }).length >= reasoningEnd) high = mid;
    else low = mid + 1;
  }
  return low;
}
