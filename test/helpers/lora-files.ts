// Small base configs and limits the LoRA adapter tests share, and a temporary folder per suite.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig } from '../../bench/random-llama';
import { LORA_MODULES, type LoraLimits, type LoraPair, type LoraWeights } from '../../src/model/lora/lora-weights';
import type { DecoderArchConfig } from '../../src/model/types';
import { maxAbsDiff } from './runner-driver';

/** Llama with GQA (8 query / 4 KV heads of 8) and an FFN of 96: every module has its own shape. */
export const LLAMA_BASE: DecoderArchConfig = llamaConfig({ hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 8, numKvHeads: 4, headDim: 8, vocabSize: 64, tieWordEmbeddings: false });

export const PHI3_BASE: DecoderArchConfig = { ...LLAMA_BASE, architecture: 'phi3' };

export const ALL_MODULES = LORA_MODULES;

export const LIMITS: LoraLimits = { maxRank: 16, dtype: 'auto' };

/** A fresh temporary folder for the suite, removed after it. */
export function tempDirPerSuite(prefix: string): () => string {
  let dir = '';
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), prefix))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return () => dir;
}

/** Largest |x - y| over every pair of two adapters (both must adapt the same modules). */
export function maxPairDiff(x: LoraWeights, y: LoraWeights): number {
  let worst = 0;
  expect(x.layers.length).toBe(y.layers.length);
  x.layers.forEach((modules, layer) => {
    expect([...modules.keys()].sort()).toEqual([...y.layers[layer].keys()].sort());
    for (const [module, pair] of modules) {
      const other: LoraPair = y.layers[layer].get(module)!;
      expect([other.rank, other.inFeatures, other.outFeatures]).toEqual([pair.rank, pair.inFeatures, pair.outFeatures]);
      worst = Math.max(worst, maxAbsDiff(pair.a, other.a), maxAbsDiff(pair.b, other.b));
    }
  });
  return worst;
}
