// The speculative decoding benchmark's prompts, as token ids (both servers get the very same ids):
//   copy: ~700-token prompts the output goes on copying from. On the trained stories260K, stories
//     made of a small pool of sentences; on a random model, two passages of its own writing and the
//     first one's opening again (passageCopyPrompts). Random decoders act much like bigram models:
//     given the same few tokens they write what they wrote before, and often fall into loops.
//   free: short prompts and free generation, greedy; sampled: the same at temperature 1, seeded.
// `repeatedBigrams` says how much of a sequence repeats itself, so the report can say what a
// workload really is.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Rng } from '../src/engine/sampling/rng';
import type { Tokenizer } from '../src/model/types';
import { longPrompts } from './long-prompts';
import { SHORT_PROMPTS } from './serve-points';
import { greedyContinuation, type Sampling } from './spec-load';

export interface SpecWorkload {
  name: 'copy' | 'free' | 'sampled';
  prompts: number[][];
  /** Absent: greedy. */
  sampling?: Sampling;
}

/** Plain temperature-1 sampling, every filter off (llama-server's top_k 40 and min_p 0.05 defaults too). */
export const PLAIN_SAMPLING: Sampling = { temperature: 1, top_p: 1, top_k: 0, min_p: 0 };

/** Token ids every bench vocabulary shares: stories260K's real pieces past its control and byte tokens. */
const FIRST_PIECE = 259;
const LAST_PIECE = 511;

function seedPrompts(count: number, length: number, seed: number): number[][] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, () => [1, ...Array.from({ length }, () => FIRST_PIECE + Math.floor(rng.nextDouble() * (LAST_PIECE - FIRST_PIECE + 1)))]);
}

/** `count` distinct short prompts (random real pieces after BOS), greedy (free) and sampled. */
export function freeWorkloads(count: number): SpecWorkload[] {
  const prompts = seedPrompts(count, 6, 99);
  return [
    { name: 'free', prompts },
    { name: 'sampled', prompts, sampling: PLAIN_SAMPLING },
  ];
}

/**
 * A random model's copy prompts, cached in `cacheFile`: passage A (a 6-piece seed and the model's
 * greedy continuation), passage B (the next prompt's), then A's seed again. From there the model
 * writes A once more, as near as its changed context lets it: the output copies a span of the
 * prompt, and prompt lookup finds it after the repeated seed.
 */
export async function passageCopyPrompts(baseUrl: string, count: number, promptLen: number, cacheFile: string): Promise<SpecWorkload> {
  if (existsSync(cacheFile)) return { name: 'copy', prompts: JSON.parse(readFileSync(cacheFile, 'utf8')) as number[][] };
  const seeds = seedPrompts(count, 6, 7);
  const passageLen = Math.floor((promptLen - 6) / 2);
  const passages = await Promise.all(seeds.map(async (s) => [...s, ...(await greedyContinuation(baseUrl, s, passageLen - s.length))]));
  const prompts = passages.map((a, i) => [...a, ...passages[(i + 1) % count].slice(1), ...seeds[i].slice(1)]);
  writeFileSync(cacheFile, JSON.stringify(prompts));
  return { name: 'copy', prompts };
}

/** stories260K's workloads from text: long stories of a small sentence pool (copy) and the short openings (free). */
export function storiesWorkloads(tokenizer: Tokenizer, count: number, promptLen: number): SpecWorkload[] {
  const encode = (text: string) => tokenizer.encode(text);
  const free = Array.from({ length: count }, (_, i) => encode(`${SHORT_PROMPTS[i % SHORT_PROMPTS.length]} Story ${i + 1}.`));
  return [
    { name: 'copy', prompts: longPrompts(tokenizer, count, promptLen).map(encode) },
    { name: 'free', prompts: free },
    { name: 'sampled', prompts: free, sampling: PLAIN_SAMPLING },
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
