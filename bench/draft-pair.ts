// A draft / target pair that agrees the way a trained model family does, for the speculative
// decoding benchmark: the target is the draft plus extra layers whose output projections
// (o_proj, down_proj) are scaled by `residualScale`, so they only nudge the draft's residual
// stream. Embeddings, the draft's layers, the final norm and the head are the same tensors in
// both files; `residualScale` 0 makes the target compute exactly the draft's logits. Unrelated
// random models would almost never agree on a greedy token, which no real draft/target pair does.

import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { writeModelGguf, type HfTensorSource } from '../src/model/gguf/write-model';
import type { GgufWriteType } from '../src/model/gguf/writer';
import type { DecoderArchConfig } from '../src/model/types';
import { paddedTokenizerMetadata } from './random-model';
import { lazyRandomTensors, llamaConfig } from './random-llama';

export interface DraftPairShape {
  hiddenSize: number;
  intermediateSize: number;
  numHeads: number;
  draftLayers: number;
  targetLayers: number;
  vocabSize: number;
  /** Factor on the extra layers' o_proj and down_proj (their additions to the residual stream). */
  residualScale: number;
  seed?: number;
}

/** The benchmark's pair: a ~90M target (dim 768, 12 layers) over a 1-layer draft, 4096 pieces. */
export const BENCH_PAIR: DraftPairShape = { hiddenSize: 768, intermediateSize: 2048, numHeads: 12, draftLayers: 1, targetLayers: 12, vocabSize: 4096, residualScale: 0.1 };

export interface PairModel {
  config: DecoderArchConfig;
  tensors: HfTensorSource[];
}

function pairConfig(shape: DraftPairShape, numLayers: number): DecoderArchConfig {
  const { hiddenSize, intermediateSize, numHeads, vocabSize } = shape;
  return llamaConfig({ hiddenSize, intermediateSize, numHeads, numKvHeads: numHeads, numLayers, vocabSize, tieWordEmbeddings: false });
}

const DEFAULT_SEED = 4321;
const RESIDUAL_OUTPUT = /^model\.layers\.(\d+)\.(self_attn\.o_proj|mlp\.down_proj)\.weight$/;
const LAYER = /^model\.layers\.(\d+)\./;

/** Both models' canonical HF tensors (drawn lazily, one tensor at a time); the draft's are the target's by name. */
export function draftPairTensors(shape: DraftPairShape): { draft: PairModel; target: PairModel } {
  if (shape.draftLayers < 1 || shape.targetLayers <= shape.draftLayers) throw new Error('draft-pair: need 1 <= draftLayers < targetLayers');
  const targetConfig = pairConfig(shape, shape.targetLayers);
  const targetTensors = lazyRandomTensors(targetConfig, shape.seed ?? DEFAULT_SEED).map(({ name, shape: dims, values }): HfTensorSource => {
    const layer = RESIDUAL_OUTPUT.exec(name);
    if (!layer || Number(layer[1]) < shape.draftLayers) return { name, shape: dims, values };
    return { name, shape: dims, values: () => values().map((v) => v * shape.residualScale) };
  });
  const inDraft = (name: string) => {
    const layer = LAYER.exec(name);
    return !layer || Number(layer[1]) < shape.draftLayers;
  };
  return {
    draft: { config: pairConfig(shape, shape.draftLayers), tensors: targetTensors.filter((t) => inDraft(t.name)) },
    target: { config: targetConfig, tensors: targetTensors },
  };
}

/** Files are named by shape; the draft's name leaves out what only the target depends on. */
function pairFileNames(shape: DraftPairShape, matrixType: GgufWriteType): { draft: string; target: string } {
  const base = `pair-d${shape.hiddenSize}-v${shape.vocabSize}-seed${shape.seed ?? DEFAULT_SEED}`;
  return { draft: `${base}-l${shape.draftLayers}-draft-${matrixType}.gguf`, target: `${base}-l${shape.draftLayers}x${shape.targetLayers}-s${shape.residualScale}-target-${matrixType}.gguf` };
}

/** The pair's GGUF files in `cacheDir` (written once, reused), with stories260K's pieces padded to the pair's vocabulary. */
export async function ensureDraftPair(shape: DraftPairShape, cacheDir: string, storiesPath: string, matrixType: GgufWriteType = 'q8_0'): Promise<{ draft: string; target: string }> {
  const names = pairFileNames(shape, matrixType);
  const paths = { draft: join(cacheDir, names.draft), target: join(cacheDir, names.target) };
  if (existsSync(paths.draft) && existsSync(paths.target)) return paths;
  mkdirSync(cacheDir, { recursive: true });
  const tokenizer = await paddedTokenizerMetadata(storiesPath, shape.vocabSize);
  const models = draftPairTensors(shape);
  for (const role of ['draft', 'target'] as const) {
    if (existsSync(paths[role])) continue;
    const { config, tensors } = models[role];
    const tmp = `${paths[role]}.partial`;
    writeModelGguf(tmp, config, tensors, tokenizer, matrixType, names[role].replace(/\.gguf$/, ''));
    renameSync(tmp, paths[role]);
  }
  return paths;
}
