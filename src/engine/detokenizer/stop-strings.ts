// Stop-string search on freshly detokenized text (vLLM `check_stop_strings`): only the
// window that can contain a match touching the new characters is searched, and the stop
// strings are tried in the order the client gave them.

export interface StopStringMatch {
  stop: string;
  /** Length the output text must be cut to; -1 = keep it all (match ends the text). */
  truncateTo: number;
}

export function findStopString(
  outputText: string,
  newCharCount: number,
  stop: readonly string[],
  includeInOutput: boolean,
): StopStringMatch | null {
  if (newCharCount <= 0 || stop.length === 0) return null;
  for (const s of stop) {
    const from = Math.max(0, outputText.length + 1 - newCharCount - s.length);
    let index = outputText.indexOf(s, from);
    if (index === -1) continue;
    if (includeInOutput) {
      index += s.length;
      if (index >= outputText.length) return { stop: s, truncateTo: -1 };
    }
    return { stop: s, truncateTo: index };
  }
  return null;
}

/** Largest cut <= `at` that does not split a UTF-16 surrogate pair. */
export function safeCut(text: string, at: number): number {
  if (at > 0 && at < text.length) {
    const code = text.charCodeAt(at - 1);
    if (code >= 0xd800 && code <= 0xdbff) return at - 1;
  }
  return at;
}
