// The speculative decoding benchmark's prompts, as token ids (both servers get the very same ids):
//   copy: ~700-token prompts the output goes on copying from. On the trained stories260K, stories
//     made of a small pool of sentences; on a random model, its own greedy continuation of a short
//     seed (random decoders act much like bigram models, so their output keeps re-entering spans
//     they produced before: what the prompt holds, the continuation repeats).
//   free: short prompts and free generation.
// `repeatedBigrams` says how much of a sequence repeats itself, so the report can say what a
// workload really is.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Rng } from '../src/engine/sampling/rng';
import type { Tokenizer } from '../src/model/types';
import { longPrompts } from './long-prompts';
import { SHORT_PROMPTS } from './serve-points';
import { greedyContinuation } from './spec-load';

export interface SpecWorkload {
  name: 'copy' | 'free';
  prompts: number[][];
}

/** Token ids every bench vocabulary shares: stories260K's real pieces past its control and byte tokens. */
const FIRST_PIECE = 259;
const LAST_PIECE = 511;

function seedPrompts(count: number, length: number, seed: number): number[][] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, () => [1, ...Array.from({ length }, () => FIRST_PIECE + Math.floor(rng.nextDouble() * (LAST_PIECE - FIRST_PIECE + 1)))]);
}

/** `count` distinct short prompts: random real pieces after BOS. */
export function freePrompts(count: number): SpecWorkload {
  return { name: 'free', prompts: seedPrompts(count, 6, 99) };
}

/** A random model's copy prompts: each a 6-piece seed and the model's greedy continuation to `promptLen` tokens, cached in `cacheFile`. */
export async function selfContinuationPrompts(baseUrl: string, count: number, promptLen: number, cacheFile: string): Promise<SpecWorkload> {
  if (existsSync(cacheFile)) return { name: 'copy', prompts: JSON.parse(readFileSync(cacheFile, 'utf8')) as number[][] };
  const seeds = seedPrompts(count, 6, 7);
  const prompts = await Promise.all(seeds.map(async (s) => [...s, ...(await greedyContinuation(baseUrl, s, promptLen - s.length))]));
  writeFileSync(cacheFile, JSON.stringify(prompts));
  return { name: 'copy', prompts };
}

/** stories260K's workloads from text: long stories of a small sentence pool (copy) and the short openings (free). */
export function storiesWorkloads(tokenizer: Tokenizer, count: number, promptLen: number): SpecWorkload[] {
  const encode = (text: string) => tokenizer.encode(text);
  return [
    { name: 'copy', prompts: longPrompts(tokenizer, count, promptLen).map(encode) },
    { name: 'free', prompts: Array.from({ length: count }, (_, i) => encode(`${SHORT_PROMPTS[i % SHORT_PROMPTS.length]} Story ${i + 1}.`)) },
  ];
}

/** The fraction of positions whose bigram (previous token, token) already occurred earlier in `ids`. */
export function repeatedBigrams(ids: readonly number[]): number {
  const seen = new Set<number>();
  let repeated = 0;
  for (let i = 1; i < ids.length; i++) {
    const key = ids[i - 1] * 1_000_003 + ids[i];
    if (seen.has(key)) repeated++;
    seen.add(key);
  }
  return ids.length > 1 ? repeated / (ids.length - 1) : 0;
}
