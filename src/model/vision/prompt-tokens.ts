// Token ids of a family's image tokens, taken from the model's tokenizer (the config's ids, when
// it gives them, must agree): a tokenizer that lacks one cannot place images, so it is refused.
import type { Tokenizer } from '../types';

/** The id of the single token spelled `text`; throws naming it when the tokenizer has none. */
export function specialTokenId(tokenizer: Tokenizer, text: string, source: string, configId?: unknown): number {
  const ids = tokenizer.encode(text, { addSpecialTokens: false });
  if (ids.length !== 1 || tokenizer.idToToken(ids[0]) !== text) {
    throw new Error(`${source}: the tokenizer has no ${text} token, which this model's image prompts need`);
  }
  if (configId !== undefined && configId !== null && configId !== ids[0]) {
    throw new Error(`${source}: config.json says ${text} is token ${JSON.stringify(configId)}, the tokenizer says ${ids[0]}`);
  }
  return ids[0];
}

/** The tokenizer that image prompts need (models loaded without one cannot take images). */
export function requireTokenizer(tokenizer: Tokenizer | null, source: string): Tokenizer {
  if (!tokenizer) throw new Error(`${source}: a vision model needs its tokenizer for the image tokens (--skip-tokenizer-init is not supported with images)`);
  return tokenizer;
}
