// The scheduler's side of images whose tokens attend both ways (VisionModel.bidirectionalImages,
// Gemma 3): each image's run of positions is computed in one step, as vLLM does for such models
// (it forces --disable-chunked-mm-input): a prefill chunk that would end inside a run stops
// before it, so the text before the image runs first and the whole image next; and a prefix-cache
// hit that ends inside a run backs off to the block where the run starts.

/** Prompt positions [offset, offset + length) of one image (an ImagePlacement). */
export interface ImageRun {
  offset: number;
  length: number;
}

/** vLLM's start-up refusal where one image's run can never fit a step. */
export function checkRunsFitBudget(tokensPerImage: number, maxNumBatchedTokens: number): void {
  if (tokensPerImage > maxNumBatchedTokens) {
    throw new Error(
      `Chunked MM input disabled but max_tokens_per_mm_item (${tokensPerImage}) is larger than max_num_batched_tokens (${maxNumBatchedTokens}). Please increase max_num_batched_tokens.`,
    );
  }
}

/** The run that holds positions on both sides of `cut` (the cut would split it), if any. */
function runAcross(runs: readonly ImageRun[], cut: number): ImageRun | undefined {
  return runs.find((r) => r.offset < cut && r.offset + r.length > cut);
}

/**
 * Tokens a chunk from `from` may take of the `n` it was given without ending inside a run: up to
 * the start of the run it would cut. A chunk that starts at the run takes all of it where the
 * step's token budget (`budget`) has room, though --long-prefill-token-threshold made `n` smaller;
 * else 0: the run waits for a step with room for all of it.
 */
export function chunkKeepingRunsWhole(runs: readonly ImageRun[], from: number, n: number, budget: number): number {
  const run = runAcross(runs, from + n);
  if (!run) return n;
  if (run.offset > from) return run.offset - from;
  // A chunk that starts inside a run (only a hit could leave one there, and hits back off) keeps n.
  if (run.offset < from) return n;
  return run.length <= budget ? run.length : 0;
}

/** The most whole blocks a prefix hit of `hitTokens` may keep: those before a run it would end inside (null: all). */
export function hitBlocksKeepingRunsWhole(runs: readonly ImageRun[], hitTokens: number, blockSize: number): number | null {
  const run = runAcross(runs, hitTokens);
  return run ? Math.floor(run.offset / blockSize) : null;
}
