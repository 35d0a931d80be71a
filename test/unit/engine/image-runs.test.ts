// The scheduler's rules for images computed whole (image-runs.ts): where a prefill chunk may end,
// how far a prefix hit backs off, and the start-up check against max_num_batched_tokens.
import { checkRunsFitBudget, chunkKeepingRunsWhole, hitBlocksKeepingRunsWhole } from '../../../src/engine/core/image-runs';

const RUNS = [
  { offset: 10, length: 8 },
  { offset: 30, length: 4 },
];

describe('image runs computed whole', () => {
  it.each([
    ['a chunk that ends before the image', 0, 10, 20, 10],
    ['a chunk that would cut the image stops before it', 0, 14, 20, 10],
    ['a chunk from the image takes all of it', 10, 8, 20, 8],
    ['a chunk from the image with too little budget waits', 10, 5, 5, 0],
    ['a threshold smaller than the image gives way where the budget has room', 10, 4, 20, 8],
    ['a chunk that ends at the image end is kept', 5, 13, 20, 13],
    ['a chunk past both images is kept', 0, 40, 40, 40],
  ])('%s', (_name, from, n, budget, want) => {
    expect(chunkKeepingRunsWhole(RUNS, from, n, budget)).toBe(want);
  });

  it('backs a hit off to the block where the image it ends inside starts', () => {
    expect(hitBlocksKeepingRunsWhole(RUNS, 16, 4)).toBe(2);
    expect(hitBlocksKeepingRunsWhole(RUNS, 32, 16)).toBe(1);
    expect(hitBlocksKeepingRunsWhole(RUNS, 20, 4)).toBeNull();
    expect(hitBlocksKeepingRunsWhole(RUNS, 18, 2)).toBeNull();
  });

  it("refuses an image larger than a step with vLLM's message", () => {
    expect(() => checkRunsFitBudget(256, 128)).toThrow(
      'Chunked MM input disabled but max_tokens_per_mm_item (256) is larger than max_num_batched_tokens (128). Please increase max_num_batched_tokens.',
    );
    expect(() => checkRunsFitBudget(256, 256)).not.toThrow();
  });
});
