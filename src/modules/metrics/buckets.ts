// Histogram buckets exactly as vLLM declares them (v1/metrics/loggers.py, buckets.py).

/** 1-2-5 series up to `max` (vLLM build_1_2_5_buckets): 1,2,5,10,20,50,... <= max. */
export function buckets125(max: number): number[] {
  const out: number[] = [];
  for (let exponent = 1; ; exponent *= 10) {
    for (const mantissa of [1, 2, 5]) {
      const value = mantissa * exponent;
      if (value > max) return out;
      out.push(value);
    }
  }
}

export const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560,
];
export const INTER_TOKEN_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
export const REQUEST_LATENCY_BUCKETS = [
  0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680,
];
export const REQUEST_N_BUCKETS = [1, 2, 5, 10, 20];
/** vllm:iteration_tokens_total (fixed since vLLM stopped deriving them from CUDA graph sizes). */
export const ITERATION_TOKENS_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
/** ortllm: grammar compile times (xgrammar takes ~5 ms to ~1 s depending on schema and vocabulary). */
export const GRAMMAR_COMPILE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** prometheus-fastapi-instrumentator's defaults. */
export const HTTP_DURATION_BUCKETS = [0.1, 0.5, 1];
export const HTTP_DURATION_HIGHR_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60,
];
