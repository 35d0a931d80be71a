// bad_words → token sequences (vLLM `SamplingParams.update_from_tokenizer`): each word is
// encoded without special tokens both as-is (left-stripped) and with a leading space, so
// it is banned at the start of the text and mid-text. The spaced form is kept only when it
// is a different word token of the same length (otherwise it would ban the same thing or
// something unrelated).

import { RequestValidationError } from '../errors';
import type { Tokenizer } from '../../model/types';

export function encodeBadWords(badWords: readonly string[], tokenizer: Tokenizer): number[][] {
  const sequences: number[][] = [];
  for (const word of badWords) {
    const bare = word.replace(/^\s+/, '');
    const plain = tokenizer.encode(bare, { addSpecialTokens: false });
    if (plain.length === 0) {
      throw new RequestValidationError('bad_words entries must tokenize to at least one token.', 'bad_words');
    }
    sequences.push(plain);
    const spaced = tokenizer.encode(' ' + bare, { addSpecialTokens: false });
    if (spaced.length > 0 && spaced[0] !== plain[0] && spaced.length === plain.length) sequences.push(spaced);
  }
  const invalid = sequences.flat().filter((id) => id < 0 || id >= tokenizer.vocabSize);
  if (invalid.length > 0) {
    throw new RequestValidationError(
      `The model vocabulary size is ${tokenizer.vocabSize}, but the following tokens were specified as bad: [${invalid.join(', ')}]. All token id values should be integers satisfying: 0 <= token_id <= ${tokenizer.vocabSize - 1}.`,
      'bad_words',
    );
  }
  return sequences;
}
