// The logits processors every request may use, in vLLM v1's order (see logits-processor.ts).

import type { LogitsProcessor, LogitsProcessorFactory } from './logits-processor';

/** structured_outputs: the sequence's grammar bitmask (built by the engine, see src/engine/structured/). */
export const structuredOutputs: LogitsProcessorFactory = {
  name: 'structured_outputs',
  create: (ctx) => ctx.constraint ?? null,
};

/** allowed_token_ids: every other token gets -inf. */
export const allowedTokenIds: LogitsProcessorFactory = {
  name: 'allowed_token_ids',
  create({ params, vocabSize }) {
    const ids = params.allowed_token_ids;
    if (ids == null || ids.length === 0) return null;
    const mask = new Uint8Array(vocabSize);
    for (const id of ids) mask[id] = 1;
    return {
      apply(scores) {
        for (let i = 0; i < vocabSize; i++) if (mask[i] === 0) scores[i] = -Infinity;
      },
    };
  },
};

/** bad_words: single-token words always; a multi-token word's last token after its prefix. */
export const badWords: LogitsProcessorFactory = {
  name: 'bad_words',
  create({ params, badWordsTokenIds }) {
    if (params.bad_words.length === 0) return null;
    if (badWordsTokenIds == null) throw new Error('bad_words processor: needs badWordsTokenIds (encodeBadWords)');
    const single = Int32Array.from(badWordsTokenIds.filter((w) => w.length === 1).map((w) => w[0]));
    const multi = badWordsTokenIds.filter((w) => w.length > 1);
    return {
      apply(scores, outputs) {
        for (let i = 0; i < single.length; i++) scores[single[i]] = -Infinity;
        for (const word of multi) {
          if (endsWith(outputs, word, word.length - 1)) scores[word[word.length - 1]] = -Infinity;
        }
      },
    };
  },
};

/** min_tokens: stop_token_ids and every EOS (even with ignore_eos, as vLLM) are banned until min_tokens outputs. */
export const minTokens: LogitsProcessorFactory = {
  name: 'min_tokens',
  create({ params, eosTokenIds }) {
    if (params.min_tokens <= 0) return null;
    const banned = Int32Array.from(new Set([...params.stop_token_ids, ...eosTokenIds]));
    const min = params.min_tokens;
    return {
      apply(scores, outputs) {
        if (outputs.length >= min) return;
        for (let i = 0; i < banned.length; i++) scores[banned[i]] = -Infinity;
      },
    };
  },
};

/** logit_bias: added to the raw scores (keys already normalised to integer strings). */
export const logitBias: LogitsProcessorFactory = {
  name: 'logit_bias',
  create({ params }) {
    const entries = Object.entries(params.logit_bias ?? {});
    if (entries.length === 0) return null;
    const ids = Int32Array.from(entries.map(([k]) => Number(k)));
    const values = Float32Array.from(entries.map(([, v]) => v));
    return {
      apply(scores) {
        for (let i = 0; i < ids.length; i++) scores[ids[i]] += values[i];
      },
    };
  },
};

/** The default registry, in application order. */
export const LOGITS_PROCESSORS: readonly LogitsProcessorFactory[] = [structuredOutputs, allowedTokenIds, badWords, minTokens, logitBias];

/** True when `outputs` ends with the first `len` tokens of `word`. */
function endsWith(outputs: readonly number[], word: readonly number[], len: number): boolean {
  if (outputs.length < len) return false;
  const start = outputs.length - len;
  for (let i = 0; i < len; i++) if (outputs[start + i] !== word[i]) return false;
  return true;
}

export type { LogitsProcessor };
