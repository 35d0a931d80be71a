import { RequestValidationError } from '../../../src/engine/errors';
import {
  defaultSamplingParams,
  normalizeSamplingParams,
  stopHoldBackLength,
  validateSamplingParams,
} from '../../../src/engine/sampling-params';
import type { SamplingParams } from '../../../src/engine/types';

const ctx = { vocabSize: 512, maxNumSeqs: 8 };

function rejects(partial: Record<string, unknown>, param: string, message: string | RegExp): void {
  let error: unknown;
  try {
    validateSamplingParams(normalizeSamplingParams(partial), ctx);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(RequestValidationError);
  const err = error as RequestValidationError;
  expect(err.param).toBe(param);
  if (typeof message === 'string') expect(err.message).toBe(message);
  else expect(err.message).toMatch(message);
}

describe('defaultSamplingParams', () => {
  it('has vLLM SamplingParams defaults', () => {
    const d = defaultSamplingParams();
    expect(d).toMatchObject({
      n: 1,
      temperature: 1,
      top_p: 1,
      top_k: 0,
      min_p: 0,
      presence_penalty: 0,
      frequency_penalty: 0,
      repetition_penalty: 1,
      max_tokens: 16,
      min_tokens: 0,
      seed: null,
      stop: [],
      stop_token_ids: [],
      logprobs: null,
      prompt_logprobs: null,
      detokenize: true,
      skip_special_tokens: true,
      spaces_between_special_tokens: true,
      include_stop_str_in_output: false,
      ignore_eos: false,
      output_kind: 0,
      use_beam_search: false,
      length_penalty: 1,
    });
    expect(() => validateSamplingParams(d, ctx)).not.toThrow();
  });

  it('returns a fresh object every call', () => {
    const a = defaultSamplingParams();
    a.stop.push('x');
    expect(defaultSamplingParams().stop).toEqual([]);
  });
});

describe('normalizeSamplingParams', () => {
  it('fills defaults and keeps given values, ignoring unknown keys', () => {
    const p = normalizeSamplingParams({ temperature: 0.5, max_tokens: 7, something_else: 3 });
    expect(p.temperature).toBe(0.5);
    expect(p.max_tokens).toBe(7);
    expect(p.top_p).toBe(1);
    expect((p as unknown as Record<string, unknown>).something_else).toBeUndefined();
  });

  it('null means default for non-nullable fields, and stays null for nullable ones', () => {
    const p = normalizeSamplingParams({ temperature: null, n: null, max_tokens: null, seed: null } as never);
    expect(p.temperature).toBe(1);
    expect(p.n).toBe(1);
    expect(p.max_tokens).toBeNull();
    expect(p.seed).toBeNull();
  });

  it('applies vLLM __post_init__ normalisation', () => {
    const p = normalizeSamplingParams({
      stop: 'END' as never,
      stop_token_ids: [5, 5, 6],
      bad_words: ['a', 'a'],
      seed: -1,
      logprobs: true as never,
      logit_bias: { '7': 300, ' 8 ': -250 },
    });
    expect(p.stop).toEqual(['END']);
    expect(p.stop_token_ids).toEqual([5, 6]);
    expect(p.bad_words).toEqual(['a']);
    expect(p.seed).toBeNull();
    expect(p.logprobs).toBe(1);
    expect(p.logit_bias).toEqual({ '7': 100, '8': -100 });
  });

  it('raises tiny temperatures to 0.01 and resets filters for greedy', () => {
    expect(normalizeSamplingParams({ temperature: 0.001 }).temperature).toBe(0.01);
    const g = normalizeSamplingParams({ temperature: 0, top_p: 0.5, top_k: 3, min_p: 0.2 });
    expect([g.top_p, g.top_k, g.min_p]).toEqual([1, 0, 0]);
  });

  it('checks the filter ranges before greedy sampling resets them', () => {
    expect(() => normalizeSamplingParams({ temperature: 0, top_k: -5 })).toThrow('top_k must be 0 (disable), or at least 1, got -5.');
    expect(() => normalizeSamplingParams({ temperature: 0, top_p: 0 })).toThrow('top_p must be in (0, 1], got 0.0.');
    expect(() => normalizeSamplingParams({ temperature: 0, min_p: 2 })).toThrow('min_p must be in [0, 1], got 2.0.');
  });

  it('clamps logit_bias values to [-100, 100]', () => {
    expect(normalizeSamplingParams({ logit_bias: { 5: 1e300, 6: -1e300, 7: 3 } }).logit_bias).toEqual({ '5': 100, '6': -100, '7': 3 });
  });

  it('rejects logit_bias keys that are not integers', () => {
    expect(() => normalizeSamplingParams({ logit_bias: { abc: 1 } })).toThrow(
      "logit_bias contains key(s) that cannot be converted to integer token IDs: ['abc']",
    );
  });
});

describe('validateSamplingParams', () => {
  it.each<[Record<string, unknown>, string, string | RegExp]>([
    [{ n: 0 }, 'n', 'n must be at least 1, got 0.'],
    [{ n: 1.5 }, 'n', "n must be an int, but is of type <class 'float'>"],
    [{ n: 9 }, 'n', "sampling_params.n must be at most the server's max_num_seqs (8), got 9."],
    [{ n: 3, best_of: 2 }, 'best_of', 'best_of must be greater than or equal to n, got n=3 and best_of=2.'],
    [{ n: 2, temperature: 0 }, 'n', 'n must be 1 when using greedy sampling, got 2.'],
    [{ presence_penalty: 2.5 }, 'presence_penalty', 'presence_penalty must be in [-2, 2], got 2.5.'],
    [{ frequency_penalty: -3 }, 'frequency_penalty', 'frequency_penalty must be in [-2, 2], got -3.0.'],
    [{ repetition_penalty: 0 }, 'repetition_penalty', 'repetition_penalty must be greater than zero, got 0.0.'],
    [{ repetition_penalty: 2.5 }, 'repetition_penalty', 'repetition_penalty must be in (0, 2], got 2.5.'],
    [{ temperature: -1 }, 'temperature', 'temperature must be non-negative, got -1.0.'],
    [{ temperature: 2.5 }, 'temperature', 'temperature must be in [0, 2], got 2.5.'],
    [{ top_p: 0 }, 'top_p', 'top_p must be in (0, 1], got 0.0.'],
    [{ top_p: 1.1 }, 'top_p', 'top_p must be in (0, 1], got 1.1.'],
    [{ top_k: -2 }, 'top_k', 'top_k must be 0 (disable), or at least 1, got -2.'],
    [{ top_k: 1.5 }, 'top_k', 'top_k must be an integer, got float'],
    [{ min_p: 1.5 }, 'min_p', 'min_p must be in [0, 1], got 1.5.'],
    [{ max_tokens: 0 }, 'max_tokens', 'max_tokens must be at least 1, got 0.'],
    [{ min_tokens: -1 }, 'min_tokens', 'min_tokens must be greater than or equal to 0, got -1.'],
    [{ min_tokens: 5, max_tokens: 4 }, 'min_tokens', 'min_tokens must be less than or equal to max_tokens=4, got 5.'],
    [{ logprobs: -2 }, 'logprobs', 'logprobs must be non-negative or -1, got -2.'],
    [{ logprobs: 21 }, 'logprobs', 'Requested sample logprobs of 21, which is greater than max allowed: 20'],
    [{ logprobs: -1 }, 'logprobs', 'Requested sample logprobs of 512, which is greater than max allowed: 20'],
    [{ prompt_logprobs: 30 }, 'prompt_logprobs', 'Requested prompt logprobs of 30, which is greater than max allowed: 20'],
    [{ logprob_token_ids: [1, 600] }, 'logprob_token_ids', /token_id\(s\) \[600\] in logprob_token_ids contain out-of-vocab/],
    [{ logprob_token_ids: [1, 2], logprobs: 3 }, 'logprob_token_ids', /logprobs must equal len\(logprob_token_ids\)/],
    [{ stop: ['a', ''] }, 'stop', 'stop cannot contain an empty string.'],
    [{ stop: ['a'], detokenize: false }, 'stop', /only supported when detokenize is True/],
    [{ stop_token_ids: [3, 512] }, 'stop_token_ids', 'token_id(s) [512] in stop_token_ids contain out-of-vocab token ids. Vocabulary size: 512'],
    [{ bad_words: [''] }, 'bad_words', /bad_words cannot contain an empty string/],
    [{ logit_bias: { '-1': 2 } }, 'logit_bias', 'token_id(s) [-1] in logit_bias contain out-of-vocab token ids. Vocabulary size: 512'],
    [{ allowed_token_ids: [] }, 'allowed_token_ids', 'allowed_token_ids is not None and empty!'],
    [{ allowed_token_ids: [1, 999] }, 'allowed_token_ids', 'allowed_token_ids contains out-of-vocab token id!'],
    [{ repetition_detection: { max_pattern_size: 2, min_pattern_size: 3, min_count: 2 } }, 'repetition_detection', /min_pattern_size <= max_pattern_size/],
    [{ repetition_detection: { max_pattern_size: 2, min_pattern_size: 1, min_count: 1 } }, 'repetition_detection', /min_count must be >= 2/],
    [{ truncate_prompt_tokens: -2 }, 'truncate_prompt_tokens', 'truncate_prompt_tokens must be >= -1, got -2.'],
    [{ temperature: 'hot' }, 'temperature', /temperature must be a number/],
    [{ seed: 2 ** 64 }, 'seed', /seed must be in \[-9223372036854775808, 9223372036854775807\]/],
    [{ seed: -(2 ** 63) - 4096 }, 'seed', /seed must be in/],
  ])('%j → 400 on %s', (partial, param, message) => rejects(partial, param, message));

  it('accepts the edges of every range', () => {
    const ok: Partial<SamplingParams>[] = [
      { top_k: -1 },
      { top_k: 1 },
      { top_p: 1 },
      { min_p: 1 },
      { temperature: 2 },
      { presence_penalty: -2, frequency_penalty: 2 },
      { repetition_penalty: 2 },
      { logprobs: 20, prompt_logprobs: 0 },
      { logprobs: -1 },
      { logprob_token_ids: [0, 511] },
      { n: 8, best_of: 8 },
      { max_tokens: null, min_tokens: 100 },
      { allowed_token_ids: [0, 511], stop_token_ids: [511], logit_bias: { '511': 1 } },
      // int64's edges: JSON's 9223372036854775807 reads as the double 2**63.
      { seed: 2 ** 63 },
      { seed: -(2 ** 63) },
    ];
    for (const partial of ok) {
      const extra = partial.logprobs === -1 ? { maxLogprobs: -1 } : {};
      expect(() => validateSamplingParams(normalizeSamplingParams(partial), { ...ctx, ...extra })).not.toThrow();
    }
  });
});

describe('stopHoldBackLength', () => {
  it('is max(len(stop)) - 1, or 0 when the stop string is kept in the output', () => {
    expect(stopHoldBackLength(normalizeSamplingParams({ stop: ['ab', 'xyzw'] }))).toBe(3);
    expect(stopHoldBackLength(normalizeSamplingParams({ stop: ['ab'], include_stop_str_in_output: true }))).toBe(0);
    expect(stopHoldBackLength(normalizeSamplingParams({}))).toBe(0);
  });
});
