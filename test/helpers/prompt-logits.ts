// A prompt's logits at every position from a runner made for one backend (checked), and how far
// they are from a reference relative to each row's largest logit.
import { createRunner } from '../../src/model/runner';
import type { SegmentedRunner } from '../../src/model/runner/segmented-runner';
import type { LoadedModel } from '../../src/model/types';
import { BlockAllocator, maxAbsDiff, runChunked } from './runner-driver';

export interface PromptRun {
  /** The backend the runner must have chosen (SegmentedRunner.backendName); unchecked when absent. */
  backend?: string;
  attention?: 'native' | 'graph';
  nativeQ8Gemm?: boolean;
  /** Prefill chunk (default 4). */
  chunk?: number;
}

export async function promptLogits(model: LoadedModel, prompt: readonly number[], run: PromptRun = {}): Promise<Float32Array[]> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 32, device: 'cpu', intraOpThreads: 1, nativeQ8Gemm: run.nativeQ8Gemm ?? false, attention: run.attention });
  try {
    if (run.backend) expect((runner as SegmentedRunner).backendName).toBe(run.backend);
    return await runChunked(runner, prompt, run.chunk ?? 4, new BlockAllocator(runner).table(prompt.length));
  } finally {
    await runner.dispose();
  }
}

/** The worst |got - want| over every row, relative to that row's largest |want|. */
export function worstRelative(got: Float32Array[], want: Float32Array[]): number {
  return Math.max(...got.map((row, t) => maxAbsDiff(row, want[t]) / Math.max(...want[t].map(Math.abs))));
}
