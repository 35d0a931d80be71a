// Repetition detection (vLLM `check_sequence_repetition`, naive algorithm): the request
// ends with finish_reason 'repetition' when the tail of the OUTPUT tokens is one n-gram
// repeated back to back at least `min_count` times, for some n in
// [min_pattern_size (0 → 1), max_pattern_size].

import type { RepetitionDetectionParams } from '../types';

/** True when the last `patternLen` tokens equal each of the (minCount - 1) blocks before them. */
function tailRepeats(tokens: readonly number[], patternLen: number, minCount: number): boolean {
  const end = tokens.length;
  for (let n = 1; n <= patternLen; n++) {
    const target = tokens[end - n];
    for (let m = 1; m < minCount; m++) {
      if (tokens[end - (patternLen * m + n)] !== target) return false;
    }
  }
  return true;
}

export function detectRepetition(outputTokenIds: readonly number[], params: RepetitionDetectionParams): boolean {
  const maxSize = params.max_pattern_size;
  const minSize = params.min_pattern_size <= 0 ? 1 : params.min_pattern_size;
  const minCount = params.min_count;
  if (maxSize <= 0 || minCount < 2 || minSize > maxSize) return false;
  for (let len = minSize; len <= maxSize; len++) {
    if (len * minCount > outputTokenIds.length) return false;
    if (tailRepeats(outputTokenIds, len, minCount)) return true;
  }
  return false;
}
