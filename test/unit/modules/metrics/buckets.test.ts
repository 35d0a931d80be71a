// vLLM's 1-2-5 bucket series (build_1_2_5_buckets) for token-count histograms.

import { buckets125 } from '../../../../src/modules/metrics/buckets';

describe('buckets125', () => {
  it('lists 1, 2, 5 times powers of ten up to the limit', () => {
    expect(buckets125(100)).toEqual([1, 2, 5, 10, 20, 50, 100]);
    expect(buckets125(2048)).toEqual([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]);
    expect(buckets125(1)).toEqual([1]);
  });
});
