// The long-prompt workload of `npm run bench`: distinct story-like prompts of a set token length
// (system prompts, RAG context and long chats are what a server is judged on). Every prompt
// opens differently, so neither server's prefix cache can skip work between requests, and all
// of them use only the real pieces of stories260K's vocabulary, which all bench models share.

import { writeFileSync } from 'node:fs';
import { Rng } from '../src/engine/sampling/rng';
import type { Tokenizer } from '../src/model/types';

const SENTENCES = [
  'Once upon a time, there was a little girl named Lily.',
  'She loved to play outside in the park with her friends.',
  'One day, a big dog came to the garden and wanted to play with the ball.',
  'Tom and his mom went to the store to buy some food.',
  'They saw a red apple and a big cake on the table.',
  'The sun was shining and the birds were singing in the tall tree.',
  'Sam wanted to go to the beach with his dad.',
  'The cat was sad because it lost its toy under the bed.',
  'Mia found a shiny stone near the river and showed it to her brother.',
  'The little bird flew high in the sky and looked at the town below.',
  'Ben was happy when his friend gave him a new blue car.',
  'They played all day and had lots of fun together.',
  'At night, the moon was bright and the stars were twinkling.',
  'Her mom said it was time to go to bed and read a story.',
  'The old man in the house had a garden full of flowers.',
  'A small boy named Tim liked to draw pictures of trees.',
  'The frog jumped into the pond and made a big splash.',
  'Anna shared her cookies with everyone in the class.',
  'The teddy bear was soft and warm, and Lucy hugged it tight.',
  'When the rain stopped, the children ran outside to jump in the puddles.',
];

/** `count` distinct prompts of exactly `tokens` tokens each (without BOS), as the tokenizer counts. */
export function longPrompts(tokenizer: Tokenizer, count: number, tokens: number, seed = 7): string[] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, (_, i) => {
    const parts = [`Story number ${i + 1}.`];
    let text = parts[0];
    while (tokenizer.encode(text, { addSpecialTokens: false }).length < tokens) {
      parts.push(SENTENCES[Math.floor(rng.nextDouble() * SENTENCES.length)]);
      text = parts.join(' ');
    }
    const ids = tokenizer.encode(text, { addSpecialTokens: false }).slice(0, tokens);
    return tokenizer.decode(ids);
  });
}

export function writePromptsFile(path: string, prompts: readonly string[]): void {
  writeFileSync(path, prompts.map((prompt) => JSON.stringify({ prompt })).join('\n'));
}
