// The model with a LoRA adapter merged into its weights (W + b·a in float64, rounded to float32),
// and a tiny step driver that runs sequences chunk by chunk, alone or mixed in one step.
import { mergeLora } from '../../src/model/lora/merge-lora';
import type { LoraWeights } from '../../src/model/lora/lora-weights';
import type { LoadedModel, ModelRunner, StepSequence } from '../../src/model/types';
import { BlockAllocator } from './runner-driver';

/** The model with `adapter` merged: each adapted W becomes W + b·a, summed in float64 and rounded once (quantized weights dequantized first). */
export function mergedModel(model: LoadedModel, adapter: LoraWeights): LoadedModel {
  return { ...model, weights: mergeLora(model.weights!, adapter) };
}

/** A sequence to drive: its tokens, its adapter id (0: base), and the chunk sizes it is fed in (then decodes of one). */
export interface DrivenSequence {
  tokens: number[];
  lora: number;
  /** Tokens fed at each of its steps (sum = tokens.length). */
  chunks: number[];
  /** The step it starts at (mixed runs). */
  start: number;
}

/**
 * Runs the sequences together, step by step (each feeding its next chunk from its start step on),
 * or each alone when `alone`; returns per sequence the logits of every row it fed.
 */
export async function driveSequences(runner: ModelRunner, seqs: readonly DrivenSequence[], alone: boolean): Promise<Float32Array[][]> {
  const blocks = new BlockAllocator(runner);
  const vocab = runner.config.vocabSize;
  const state = seqs.map((s) => ({ fed: 0, chunk: 0, table: blocks.table(s.tokens.length), logits: [] as Float32Array[] }));
  const run = async (which: number[]) => {
    const batch: StepSequence[] = which.map((i) => {
      const s = seqs[i];
      const count = s.chunks[state[i].chunk];
      return { tokens: s.tokens.slice(state[i].fed, state[i].fed + count), positionOffset: state[i].fed, blockTable: state[i].table, allLogits: true, lora: s.lora || undefined };
    });
    const result = await runner.step(batch);
    which.forEach((i, at) => {
      const rows = result.allLogits[at]!;
      for (let r = 0; r < batch[at].tokens.length; r++) state[i].logits.push(rows.slice(r * vocab, (r + 1) * vocab));
      state[i].fed += batch[at].tokens.length;
      state[i].chunk++;
    });
  };
  const pending = (i: number) => state[i].chunk < seqs[i].chunks.length;
  if (alone) {
    for (let i = 0; i < seqs.length; i++) while (pending(i)) await run([i]);
  } else {
    for (let step = 0; seqs.some((_, i) => pending(i)); step++) {
      const which = seqs.map((_, i) => i).filter((i) => seqs[i].start <= step && pending(i));
      if (which.length) await run(which);
    }
  }
  return state.map((s) => s.logits);
}
