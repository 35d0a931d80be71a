// Mixed text for tokenizer tests: accents, emoji (4-byte UTF-8, byte fallback), CJK, newlines,
// tabs, runs of spaces, leading/trailing spaces, punctuation and quotes.
const LINES = [
  'Once upon a time, there was a little girl named Lily. She liked to play outside.',
  '  Zoé and Chloë went to the café — "Wow!" said Zoé. 🙂🎉 It\'s 3:45pm.',
  'The end.\n\nTabs\there\tand   triple   spaces. Ünïcödé façade naïve résumé.',
  '日本語のテキスト、中文文本。 Ελληνικά κείμενα. Кириллица тоже. 👩‍👩‍👧 family emoji ZWJ.',
  'Numbers 1234567890, symbols @#$%^&*()_+-=[]{}|;\':",./<>? and a trailing space ',
  '\nA line that starts with a newline and ends with two\n\n',
  'He said, "I\'m sure they\'ll come; we\'ve waited." She didn\'t reply.',
];

/** About 4 KB of mixed text. */
export function mixedText(): string {
  let text = '';
  for (let i = 0; text.length < 4000; i++) text += LINES[i % LINES.length] + (i % 3 === 0 ? '\n' : ' ');
  return text;
}

export { LINES as MIXED_LINES };
