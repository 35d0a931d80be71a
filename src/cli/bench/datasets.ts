// Prompts for `bench serve`: `random` (vLLM's random dataset: token ids of the asked lengths,
// decoded with the model's tokenizer, optionally behind one shared prefix) and `custom`
// (a JSONL file with one {"prompt": ...} per line, cycled to --num-prompts).

import { readFileSync } from 'node:fs';
import { Rng } from '../../engine/sampling/rng';
import type { Tokenizer } from '../../model/types';

export interface SampleRequest {
  prompt: string;
  /** Prompt tokens as the dataset counts them (the server's usage replaces it when sent). */
  promptLen: number;
  outputLen: number;
}

export interface RandomDatasetOptions {
  numPrompts: number;
  inputLen: number;
  outputLen: number;
  rangeRatio: number;
  prefixLen: number;
  seed: number;
}

function lengthAround(rng: Rng, len: number, ratio: number): number {
  const low = Math.max(1, Math.floor(len * (1 - ratio)));
  const high = Math.max(low, Math.ceil(len * (1 + ratio)));
  return low + Math.floor(rng.nextDouble() * (high - low + 1));
}

/** Text of exactly `n` tokens where the tokenizer's round trip allows (re-encoded and cut). */
function textOfLength(tokenizer: Tokenizer, ids: number[], n: number): { text: string; len: number } {
  let text = tokenizer.decode(ids);
  for (let i = 0; i < 3; i++) {
    const again = tokenizer.encode(text, { addSpecialTokens: false });
    if (again.length === n) break;
    text = tokenizer.decode(again.slice(0, n));
  }
  return { text, len: tokenizer.encode(text, { addSpecialTokens: false }).length };
}

export function randomDataset(tokenizer: Tokenizer, o: RandomDatasetOptions): SampleRequest[] {
  const rng = new Rng(o.seed);
  const ordinary = Array.from({ length: tokenizer.vocabSize }, (_, id) => id).filter((id) => !tokenizer.isSpecial(id));
  if (ordinary.length === 0) throw new Error('the tokenizer has no ordinary tokens to build prompts from');
  const pick = (n: number) => Array.from({ length: n }, () => ordinary[Math.floor(rng.nextDouble() * ordinary.length)]);
  const prefix = pick(o.prefixLen);
  return Array.from({ length: o.numPrompts }, () => {
    const inputLen = lengthAround(rng, o.inputLen, o.rangeRatio);
    const { text, len } = textOfLength(tokenizer, [...prefix, ...pick(inputLen)], o.prefixLen + inputLen);
    return { prompt: text, promptLen: len, outputLen: lengthAround(rng, o.outputLen, o.rangeRatio) };
  });
}

/** vLLM's custom dataset: JSONL, one {"prompt": "..."} per line; lines are reused to reach numPrompts. */
export function customDataset(path: string, numPrompts: number, outputLen: number): SampleRequest[] {
  const prompts = readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((line, i) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new Error(`${path} line ${i + 1}: not valid JSON`);
      }
      const prompt = (value as { prompt?: unknown }).prompt;
      if (typeof prompt !== 'string') throw new Error(`${path} line ${i + 1}: needs a "prompt" string`);
      return prompt;
    });
  if (prompts.length === 0) throw new Error(`${path} has no prompts`);
  return Array.from({ length: numPrompts }, (_, i) => ({ prompt: prompts[i % prompts.length], promptLen: 0, outputLen }));
}
