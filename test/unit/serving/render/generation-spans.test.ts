// {% generation %} support on @huggingface/jinja (which drops the tags): the marker rewrite keeps
// whitespace control, and the spans map back onto token offsets.

import { Template } from '@huggingface/jinja';
import {
  assistantTokensMask,
  extractGenerationSpans,
  hasGenerationTags,
  markGenerationTags,
} from '../../../../src/serving/render/generation-spans';
import { tokenOffsets } from '../../../../src/serving/render/token-offsets';
import { createBuiltinTokenizer } from '../../../../src/model/tokenizer';

const messages = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Yo' },
  { role: 'user', content: 'Bye' },
  { role: 'assistant', content: 'Ciao' },
];

function render(source: string): string {
  return new Template(source).render({ messages });
}

describe('generation tags', () => {
  it('detects the tags, with and without whitespace control', () => {
    expect(hasGenerationTags('{% generation %}x{% endgeneration %}')).toBe(true);
    expect(hasGenerationTags('{%- generation -%}x{%- endgeneration %}')).toBe(true);
    expect(hasGenerationTags('{% if generation %}{% endif %}')).toBe(false);
  });

  it('renders the same text as the library does without markers, and finds each assistant turn', () => {
    const source =
      '{% for m in messages %}{{ m.role }}: {% if m.role == "assistant" %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}';
    const { text, spans } = extractGenerationSpans(render(markGenerationTags(source)));
    expect(text).toBe(render(source));
    expect(spans.map((s) => text.slice(s.start, s.end))).toEqual(['Yo', 'Ciao']);
  });

  it('keeps whitespace control around the tags', () => {
    const source =
      '{% for m in messages %}[{{ m.role }}]\n{%- if m.role == "assistant" %}\n  {%- generation -%}\n   {{ m.content }}   \n{%- endgeneration -%}\n  {% else %}{{ m.content }}{% endif %}{% endfor %}';
    const { text, spans } = extractGenerationSpans(render(markGenerationTags(source)));
    expect(text).toBe(render(source));
    expect(spans.map((s) => text.slice(s.start, s.end))).toEqual(['Yo', 'Ciao']);
  });

  it('counts spans in code points (Python string indexes)', () => {
    const { text, spans } = extractGenerationSpans('🙂a\uE000bc\uE001d');
    expect(text).toBe('🙂abcd');
    expect(spans).toEqual([{ start: 2, end: 4 }]);
  });

  it('closes a span left open by continue_final_message at the end of the text', () => {
    expect(extractGenerationSpans('x\uE000yz').spans).toEqual([{ start: 1, end: 3 }]);
  });

  it('marks the tokens that overlap a span', () => {
    expect(assistantTokensMask([[0, 0], [0, 2], [2, 3], [3, 5], [5, 6]], [{ start: 2, end: 5 }])).toEqual([0, 0, 1, 1, 0]);
  });
});

describe('token offsets', () => {
  const tokenizer = createBuiltinTokenizer();

  it('gives each byte-level token its character span, a split character to each of its bytes', () => {
    const text = 'hé!';
    const ids = tokenizer.encode(text, { addSpecialTokens: false });
    expect(ids).toHaveLength(4); // h, two bytes of é, !
    expect(tokenOffsets(tokenizer, text, ids)).toEqual([[0, 1], [1, 2], [1, 2], [2, 3]]);
  });

  it('gives special tokens their literal text, and unmatched tokens an empty span', () => {
    const text = '<|im_start|>hi';
    const ids = tokenizer.encode(text, { addSpecialTokens: false });
    expect(tokenOffsets(tokenizer, text, ids)).toEqual([[0, 12], [12, 13], [13, 14]]);
    expect(tokenOffsets(tokenizer, 'hi', [256, ...tokenizer.encode('hi')])).toEqual([[0, 0], [0, 1], [1, 2]]);
  });
});
