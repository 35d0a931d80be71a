// What a draft model must share with the target for its tokens to mean the same thing (vLLM's
// checks on a draft_model): a decoder that generates, the same vocabulary, and a context at least
// max_model_len long. Refused at start-up, naming what differs.

import { encoderSpecOf } from '../../model/encoder-spec';
import type { LoadedModel, ModelArchConfig, Tokenizer } from '../../model/types';

export interface DraftTarget {
  config: ModelArchConfig;
  tokenizer: Tokenizer | null;
  maxModelLen: number;
}

export function checkDraftModel(draft: LoadedModel, target: DraftTarget): void {
  const prefix = `--speculative-config: the draft model ${draft.source}`;
  if (draft.output.kind !== 'logits' || encoderSpecOf(draft.config)) {
    const what = draft.output.kind === 'logits' || draft.output.kind === 'transcription' ? 'an encoder-decoder model' : `a pooling model (${draft.output.kind})`;
    throw new Error(`${prefix} is ${what}; a draft model must be a decoder-only generation model`);
  }
  if (draft.config.vocabSize !== target.config.vocabSize) {
    throw new Error(`${prefix} has vocab_size ${draft.config.vocabSize}, the target ${target.config.vocabSize}; target and draft must share one vocabulary`);
  }
  if (draft.tokenizer && target.tokenizer) checkSamePieces(prefix, draft.tokenizer, target.tokenizer);
  if (draft.contextLength < target.maxModelLen) {
    throw new Error(`${prefix} has a context of ${draft.contextLength} tokens, shorter than max_model_len ${target.maxModelLen}; lower --max-model-len`);
  }
}

/** Same size, and every id names the same piece (a differently ordered vocabulary would draft nonsense). */
function checkSamePieces(prefix: string, draft: Tokenizer, target: Tokenizer): void {
  if (draft.vocabSize !== target.vocabSize) {
    throw new Error(`${prefix} has a tokenizer of ${draft.vocabSize} tokens, the target's ${target.vocabSize}; target and draft must share one vocabulary`);
  }
  for (let id = 0; id < target.vocabSize; id++) {
    const a = draft.idToToken(id);
    const b = target.idToToken(id);
    if (a !== b) {
      throw new Error(`${prefix}'s token ${id} is ${JSON.stringify(a)}, the target's ${JSON.stringify(b)}; target and draft must share one vocabulary`);
    }
  }
}
