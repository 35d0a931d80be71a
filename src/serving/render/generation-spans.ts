// assistant_tokens_mask support. Chat templates mark assistant output with
// `{% generation %}…{% endgeneration %}` (a transformers extension). @huggingface/jinja parses
// the tags but drops them, so the spans are lost. We rewrite each tag into an expression that
// prints a private-use marker character, render, then cut the markers out and keep their
// positions as character spans of the clean prompt text.

/** Private-use code points: never produced by real templates or tokenizers' text. */
const START_MARK = '\uE000';
const END_MARK = '\uE001';

/** Matches `{% generation %}` / `{%- endgeneration -%}` with any whitespace control. */
const GENERATION_TAG = /\{%(-?)\s*(end)?generation\s*(-?)%\}/g;

export function hasGenerationTags(template: string): boolean {
  GENERATION_TAG.lastIndex = 0;
  return GENERATION_TAG.test(template);
}

/** The template with generation tags turned into marker-printing expressions (same whitespace control). */
export function markGenerationTags(template: string): string {
  return template.replace(GENERATION_TAG, (_tag, lstrip: string, end: string | undefined, rstrip: string) => {
    const mark = end ? END_MARK : START_MARK;
    return `{{${lstrip} "${mark}" ${rstrip}}}`;
  });
}

export interface CharSpan {
  start: number;
  end: number;
}

/** Removes the markers from rendered text; returns the clean text and the generation spans in it (code point indexes). */
export function extractGenerationSpans(rendered: string): { text: string; spans: CharSpan[] } {
  let text = '';
  let length = 0; // in code points, like Python string indexes
  const spans: CharSpan[] = [];
  let open: number | null = null;
  for (const ch of rendered) {
    if (ch === START_MARK) {
      if (open === null) open = length;
    } else if (ch === END_MARK) {
      if (open !== null && length > open) spans.push({ start: open, end: length });
      open = null;
    } else {
      text += ch;
      length += 1;
    }
  }
  if (open !== null && length > open) spans.push({ start: open, end: length });
  return { text, spans };
}

/**
 * 1 for each token whose character span overlaps a generation span, else 0 (transformers'
 * assistant_masks). `offsets` are [start, end) in the same text the spans refer to.
 */
export function assistantTokensMask(offsets: ReadonlyArray<readonly [number, number]>, spans: readonly CharSpan[]): number[] {
  return offsets.map(([start, end]) =>
    end > start && spans.some((span) => start < span.end && end > span.start) ? 1 : 0,
  );
}
