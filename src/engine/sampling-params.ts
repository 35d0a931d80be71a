// SamplingParams defaults, normalisation and validation, following vLLM's
// `SamplingParams` (`__post_init__`, `_verify_args`, `verify`): same defaults,
// same rules, same messages, so a 400 from ortllm reads like one from vLLM.
//
// How the edge (src/serving, the generate module) uses it, once per request:
//   const params = normalizeSamplingParams(partialFromRequest);   // fills defaults, may throw
//   validateSamplingParams(params, { vocabSize, maxNumSeqs });    // throws RequestValidationError
// `param` on the error is the snake_case field name. The engine does not validate again.

import { RequestValidationError } from './errors';
import { resolveConstraint } from './structured/grammar-spec';
import type { RepetitionDetectionParams, SamplingParams } from './types';

/** Below this temperature sampling is greedy (vLLM `_SAMPLING_EPS`). */
const SAMPLING_EPS = 1e-5;
/** Temperatures in (0, MIN_TEMPERATURE) are raised to it (vLLM `_MAX_TEMP`) to avoid inf/nan. */
const MIN_TEMPERATURE = 1e-2;
/** vLLM's default `--max-logprobs`. */
const DEFAULT_MAX_LOGPROBS = 20;
/** vLLM `MAX_LOGPROB_TOKEN_IDS`. */
const MAX_LOGPROB_TOKEN_IDS = 128;
/** vLLM `VLLM_MAX_N_SEQUENCES` default. */
const MAX_N_SEQUENCES = 16384;

export function defaultSamplingParams(): SamplingParams {
  return {
    n: 1,
    best_of: null,
    presence_penalty: 0,
    frequency_penalty: 0,
    repetition_penalty: 1,
    temperature: 1,
    top_p: 1,
    top_k: 0,
    min_p: 0,
    seed: null,
    stop: [],
    stop_token_ids: [],
    ignore_eos: false,
    max_tokens: 16,
    min_tokens: 0,
    logprobs: null,
    prompt_logprobs: null,
    logprob_token_ids: null,
    detokenize: true,
    skip_special_tokens: true,
    spaces_between_special_tokens: true,
    include_stop_str_in_output: false,
    truncate_prompt_tokens: null,
    truncation_side: null,
    logit_bias: null,
    allowed_token_ids: null,
    bad_words: [],
    repetition_detection: null,
    use_beam_search: false,
    length_penalty: 1,
    output_kind: 0,
    structured_outputs: null,
    extra_args: null,
  };
}

/** True when the params ask for greedy decoding (temperature ~ 0). */
export function isGreedy(p: Pick<SamplingParams, 'temperature'>): boolean {
  return p.temperature < SAMPLING_EPS;
}

/** Characters of output text held back while streaming so a partial stop string never leaks. */
export function stopHoldBackLength(p: Pick<SamplingParams, 'stop' | 'include_stop_str_in_output'>): number {
  if (p.stop.length === 0 || p.include_stop_str_in_output) return 0;
  let longest = 0;
  for (const s of p.stop) longest = Math.max(longest, s.length);
  return longest - 1;
}

/**
 * Fills vLLM defaults into a partial struct (as received on /inference/v1/generate or built
 * by the request mappers) and applies vLLM's `__post_init__` normalisation:
 * stop str → [str], seed -1 → null, logprobs true → 1, duplicate stop ids / bad words removed,
 * logit_bias keys → integer strings with values clamped to [-100, 100], tiny temperatures
 * raised to 0.01, greedy forcing top_p 1 / top_k 0 / min_p 0. Null for a defaulted field
 * means "use the default" (vLLM `from_optional`). Unknown keys are ignored, except
 * `guided_decoding` (the pre-`structured_outputs` name of the same struct), read as an alias.
 */
export function normalizeSamplingParams(
  partial: Partial<SamplingParams> & Record<string, unknown>,
): SamplingParams {
  partial = withGuidedDecodingAlias(partial);
  const p = defaultSamplingParams();
  const out = p as unknown as Record<string, unknown>;
  for (const key of Object.keys(p)) {
    const value = partial[key];
    if (value === undefined) continue;
    // Nullable fields keep an explicit null; non-nullable ones fall back to the default.
    if (value === null && out[key] !== null && key !== 'max_tokens') continue;
    out[key] = value;
  }

  if (typeof p.stop === 'string') p.stop = [p.stop];
  else if (p.stop == null) p.stop = [];
  if (p.stop_token_ids == null) p.stop_token_ids = [];
  else if (Array.isArray(p.stop_token_ids)) p.stop_token_ids = [...new Set(p.stop_token_ids)];
  if (p.bad_words == null) p.bad_words = [];
  else if (Array.isArray(p.bad_words)) p.bad_words = [...new Set(p.bad_words)];
  if (p.seed === -1) p.seed = null;
  if ((p.logprobs as unknown) === true) p.logprobs = 1;
  if ((p.prompt_logprobs as unknown) === true) p.prompt_logprobs = 1;
  if (p.logit_bias != null) p.logit_bias = normalizeLogitBias(p.logit_bias);

  if (typeof p.temperature === 'number' && p.temperature > 0 && p.temperature < MIN_TEMPERATURE) {
    p.temperature = MIN_TEMPERATURE;
  }
  if (typeof p.temperature === 'number' && p.temperature < SAMPLING_EPS && p.temperature >= 0) {
    // Greedy: the filters are meaningless and vLLM resets them, but only after checking their
    // ranges (top_k -5 is a 400 at any temperature).
    checkFilters(p);
    p.top_p = 1;
    p.top_k = 0;
    p.min_p = 0;
  }
  return p;
}

/** The ranges of top_p, top_k (-1, 0 or >= 1) and min_p. */
function checkFilters(p: SamplingParams): void {
  const number = (name: 'top_p' | 'min_p'): number => {
    const v = p[name] as unknown;
    if (typeof v !== 'number' || Number.isNaN(v)) throw new RequestValidationError(`${name} must be a number, got ${JSON.stringify(v)}.`, name);
    return v;
  };
  const topP = number('top_p');
  if (!(topP > 0 && topP <= 1)) throw new RequestValidationError(`top_p must be in (0, 1], got ${pyNum(topP)}.`, 'top_p');
  const topK = p.top_k as unknown;
  if (typeof topK !== 'number' || !Number.isInteger(topK)) throw new RequestValidationError(`top_k must be an integer, got ${pyTypeName(topK, false)}`, 'top_k');
  if (topK < -1) throw new RequestValidationError(`top_k must be 0 (disable), or at least 1, got ${topK}.`, 'top_k');
  const minP = number('min_p');
  if (!(minP >= 0 && minP <= 1)) throw new RequestValidationError(`min_p must be in [0, 1], got ${pyNum(minP)}.`, 'min_p');
}

/** Older vLLM's `guided_decoding` ({json, regex, choice, grammar, json_object, backend, …}) → structured_outputs. */
function withGuidedDecodingAlias<T extends Record<string, unknown>>(partial: T): T {
  const guided = partial.guided_decoding;
  if (guided == null) return partial;
  if (partial.structured_outputs != null) {
    throw new RequestValidationError('Give structured_outputs or its old name guided_decoding, not both.', 'guided_decoding');
  }
  if (typeof guided !== 'object' || Array.isArray(guided)) throw new RequestValidationError('guided_decoding must be an object.', 'guided_decoding');
  const { backend, ...constraint } = guided as Record<string, unknown>;
  if (backend != null && !(typeof backend === 'string' && ['xgrammar', 'auto'].includes(backend.split(':')[0]))) {
    throw new RequestValidationError(`guided_decoding.backend ${JSON.stringify(backend)} is not available: the backend is xgrammar.`, 'guided_decoding');
  }
  return { ...partial, structured_outputs: constraint };
}

function normalizeLogitBias(bias: Record<string, number>): Record<string, number> {
  if (typeof bias !== 'object' || Array.isArray(bias)) {
    throw new RequestValidationError('logit_bias must be an object mapping token ids to biases.', 'logit_bias');
  }
  const out: Record<string, number> = {};
  const invalidKeys: string[] = [];
  for (const [key, value] of Object.entries(bias)) {
    if (!/^\s*[+-]?\d+\s*$/.test(key)) {
      invalidKeys.push(key);
      continue;
    }
    if (typeof value !== 'number' || Number.isNaN(value)) {
      throw new RequestValidationError(`logit_bias values must be numbers, got ${JSON.stringify(value)}.`, 'logit_bias');
    }
    out[String(parseInt(key, 10))] = Math.min(100, Math.max(-100, value));
  }
  if (invalidKeys.length > 0) {
    throw new RequestValidationError(
      `logit_bias contains key(s) that cannot be converted to integer token IDs: ${pyList(invalidKeys.map((k) => `'${k}'`))}`,
      'logit_bias',
    );
  }
  return out;
}

export interface SamplingValidationContext {
  /** Model vocabulary size (logits width). */
  vocabSize: number;
  /** Server's --max-num-seqs: n above it is refused (vLLM's generate endpoint rule). */
  maxNumSeqs?: number;
  /** --max-logprobs (vLLM default 20; -1 = vocab size). */
  maxLogprobs?: number;
}

/** Throws RequestValidationError(message, param) with vLLM's messages when a field is out of range. */
const INT64_MIN = -(2 ** 63);
const INT64_MAX_AS_DOUBLE = 2 ** 63;

export function validateSamplingParams(p: SamplingParams, ctx: SamplingValidationContext): void {
  const fail = (message: string, param: string): never => {
    throw new RequestValidationError(message, param);
  };
  const num = (name: keyof SamplingParams): number => {
    const v = p[name];
    if (typeof v !== 'number' || Number.isNaN(v)) fail(`${name} must be a number, got ${JSON.stringify(v)}.`, name);
    return v as number;
  };
  const int = (name: keyof SamplingParams): number => {
    const v = num(name);
    if (!Number.isInteger(v)) fail(`${name} must be an integer, got ${v}.`, name);
    return v;
  };
  const intOrNull = (name: keyof SamplingParams): number | null => (p[name] == null ? null : int(name));
  const intList = (name: keyof SamplingParams): number[] | null => {
    const v = p[name];
    if (v == null) return null;
    if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x))) {
      fail(`${name} must contain only integers, got ${JSON.stringify(v)}.`, name);
    }
    return v as number[];
  };
  const requireInVocab = (ids: readonly number[], name: string): void => {
    const bad = outOfVocab(ids, ctx.vocabSize);
    if (bad.length > 0) fail(`token_id(s) ${pyList(bad)} in ${name} contain out-of-vocab token ids. Vocabulary size: ${ctx.vocabSize}`, name);
  };

  // n / best_of
  const n = p.n as unknown;
  if (typeof n !== 'number' || !Number.isInteger(n)) {
    fail(`n must be an int, but is of type ${pyTypeName(n)}`, 'n');
  }
  if (p.n < 1) fail(`n must be at least 1, got ${p.n}.`, 'n');
  if (p.n > MAX_N_SEQUENCES) {
    fail(
      `n must be at most ${MAX_N_SEQUENCES}, got ${p.n}. To increase this limit, set the VLLM_MAX_N_SEQUENCES environment variable.`,
      'n',
    );
  }
  if (ctx.maxNumSeqs != null && p.n > ctx.maxNumSeqs) {
    fail(`sampling_params.n must be at most the server's max_num_seqs (${ctx.maxNumSeqs}), got ${p.n}.`, 'n');
  }
  const bestOf = intOrNull('best_of');
  if (bestOf != null && bestOf < p.n) {
    fail(`best_of must be greater than or equal to n, got n=${p.n} and best_of=${bestOf}.`, 'best_of');
  }
  if (bestOf != null && ctx.maxNumSeqs != null && bestOf > ctx.maxNumSeqs) {
    fail(`best_of must be at most the server's max_num_seqs (${ctx.maxNumSeqs}), got ${bestOf}.`, 'best_of');
  }

  // penalties
  const presence = num('presence_penalty');
  if (!(presence >= -2 && presence <= 2)) fail(`presence_penalty must be in [-2, 2], got ${pyNum(presence)}.`, 'presence_penalty');
  const frequency = num('frequency_penalty');
  if (!(frequency >= -2 && frequency <= 2)) {
    fail(`frequency_penalty must be in [-2, 2], got ${pyNum(frequency)}.`, 'frequency_penalty');
  }
  const repetition = num('repetition_penalty');
  if (!Number.isFinite(repetition)) {
    fail(`repetition_penalty must be a finite number, got ${pyNum(repetition)}.`, 'repetition_penalty');
  }
  if (repetition <= 0) fail(`repetition_penalty must be greater than zero, got ${pyNum(repetition)}.`, 'repetition_penalty');
  if (repetition > 2) fail(`repetition_penalty must be in (0, 2], got ${pyNum(repetition)}.`, 'repetition_penalty');

  // temperature and filters
  const temperature = num('temperature');
  if (!Number.isFinite(temperature)) fail(`temperature must be a finite number, got ${pyNum(temperature)}.`, 'temperature');
  if (temperature < 0) fail(`temperature must be non-negative, got ${pyNum(temperature)}.`, 'temperature');
  if (temperature > 2) fail(`temperature must be in [0, 2], got ${pyNum(temperature)}.`, 'temperature');
  checkFilters(p);
  if (isGreedy(p) && p.n > 1 && !p.use_beam_search) {
    fail(`n must be 1 when using greedy sampling, got ${p.n}.`, 'n');
  }
  if (p.seed != null) {
    const seed = int('seed');
    // vLLM: Field(ge=int64 min, le=int64 max). JSON numbers arrive as doubles, and int64's max
    // reads as 2**63 (as do its neighbours within 1024): that double is the largest accepted.
    if (seed < INT64_MIN || seed > INT64_MAX_AS_DOUBLE) fail(`seed must be in [-9223372036854775808, 9223372036854775807], got ${seed}.`, 'seed');
  }

  // lengths
  const maxTokens = intOrNull('max_tokens');
  if (maxTokens != null && maxTokens < 1) fail(`max_tokens must be at least 1, got ${maxTokens}.`, 'max_tokens');
  const minTokens = int('min_tokens');
  if (minTokens < 0) fail(`min_tokens must be greater than or equal to 0, got ${minTokens}.`, 'min_tokens');
  if (maxTokens != null && minTokens > maxTokens) {
    fail(`min_tokens must be less than or equal to max_tokens=${maxTokens}, got ${minTokens}.`, 'min_tokens');
  }
  const truncate = intOrNull('truncate_prompt_tokens');
  if (truncate != null && truncate < -1) {
    fail(`truncate_prompt_tokens must be >= -1, got ${truncate}.`, 'truncate_prompt_tokens');
  }
  if (!Number.isFinite(num('length_penalty'))) fail('length_penalty must be a finite number.', 'length_penalty');

  // logprobs
  const maxLogprobs = ctx.maxLogprobs == null ? DEFAULT_MAX_LOGPROBS : ctx.maxLogprobs === -1 ? ctx.vocabSize : ctx.maxLogprobs;
  const logprobCount = (name: 'logprobs' | 'prompt_logprobs', label: string): number | null => {
    const value = intOrNull(name);
    if (value != null && value !== -1 && value < 0) fail(`${name} must be non-negative or -1, got ${value}.`, name);
    const wanted = value === -1 ? ctx.vocabSize : value;
    if (wanted && wanted > maxLogprobs) {
      fail(`Requested ${label} logprobs of ${wanted}, which is greater than max allowed: ${maxLogprobs}`, name);
    }
    return value;
  };
  const logprobs = logprobCount('logprobs', 'sample');
  logprobCount('prompt_logprobs', 'prompt');
  const logprobIds = intList('logprob_token_ids');
  if (logprobIds != null) {
    if (logprobIds.length > MAX_LOGPROB_TOKEN_IDS) {
      fail(
        `Requested logprob_token_ids of length ${logprobIds.length}, which is greater than max allowed: ${MAX_LOGPROB_TOKEN_IDS}`,
        'logprob_token_ids',
      );
    }
    requireInVocab(logprobIds, 'logprob_token_ids');
    if (logprobs != null && logprobs !== logprobIds.length) {
      fail(
        `When both logprobs and logprob_token_ids are set, logprobs must equal len(logprob_token_ids). Got logprobs=${logprobs}, len(logprob_token_ids)=${logprobIds.length}.`,
        'logprob_token_ids',
      );
    }
  }

  // stop conditions
  if (!Array.isArray(p.stop) || !p.stop.every((s) => typeof s === 'string')) {
    fail(`stop must be a string or a list of strings, got ${JSON.stringify(p.stop)}.`, 'stop');
  }
  if (p.stop.some((s) => s.length === 0)) fail('stop cannot contain an empty string.', 'stop');
  if (p.stop.length > 0 && !p.detokenize) {
    fail('stop strings are only supported when detokenize is True. Set detokenize=True to use stop.', 'stop');
  }
  requireInVocab(intList('stop_token_ids') ?? [], 'stop_token_ids');
  if (!Array.isArray(p.bad_words) || !p.bad_words.every((s) => typeof s === 'string')) {
    fail(`bad_words must be a list of strings, got ${JSON.stringify(p.bad_words)}.`, 'bad_words');
  }
  if (p.bad_words.some((w) => w.length === 0)) {
    fail(`bad_words cannot contain an empty string. Got bad_words=${pyList(p.bad_words.map((w) => `'${w}'`))}`, 'bad_words');
  }

  // token-id keyed processors
  if (p.logit_bias != null) requireInVocab(Object.keys(p.logit_bias).map((k) => Number(k)), 'logit_bias');
  const allowed = intList('allowed_token_ids');
  if (allowed != null) {
    if (allowed.length === 0) fail('allowed_token_ids is not None and empty!', 'allowed_token_ids');
    if (outOfVocab(allowed, ctx.vocabSize).length > 0) fail('allowed_token_ids contains out-of-vocab token id!', 'allowed_token_ids');
  }

  if (p.repetition_detection != null) validateRepetitionDetection(p.repetition_detection);
  if (p.structured_outputs != null) {
    if (p.use_beam_search) fail('Structured outputs are not supported with beam search.', 'use_beam_search');
    // The shape only: xgrammar reads the spec in the engine's compile workers, never here.
    resolveConstraint(p.structured_outputs);
  }
  if (![0, 1, 2].includes(p.output_kind)) fail(`output_kind must be 0, 1 or 2, got ${p.output_kind}.`, 'output_kind');
  if (p.truncation_side != null && p.truncation_side !== 'left' && p.truncation_side !== 'right') {
    fail(`truncation_side must be 'left' or 'right', got ${JSON.stringify(p.truncation_side)}.`, 'truncation_side');
  }
}

function validateRepetitionDetection(r: RepetitionDetectionParams): void {
  const maxSize = r.max_pattern_size ?? 0;
  const minSize = r.min_pattern_size ?? 0;
  const minCount = r.min_count ?? 0;
  if (![maxSize, minSize, minCount].every((v) => Number.isInteger(v))) {
    throw new RequestValidationError('repetition_detection fields must be integers.', 'repetition_detection');
  }
  if (maxSize < 0 || minSize < 0 || minSize > maxSize) {
    throw new RequestValidationError(
      'max_pattern_size, min_pattern_size must be >=0, with min_pattern_size <= max_pattern_size. Set both to 0 to disable repetitive pattern detection.',
      'repetition_detection',
    );
  }
  if (maxSize > 0 && minCount < 2) {
    throw new RequestValidationError(
      'min_count must be >= 2 to detect repetitive patterns in engine output. If you do not wish to detect repetitive patterns, set max_pattern_size to 0.',
      'repetition_detection',
    );
  }
}

function outOfVocab(ids: readonly number[], vocabSize: number): number[] {
  return ids.filter((id) => !(id >= 0 && id < vocabSize));
}

/** Python list repr of already-formatted items: [1, 2]. */
function pyList(items: readonly (string | number)[]): string {
  return `[${items.join(', ')}]`;
}

/** Python float repr for messages: 3 → 3.0 (vLLM formats floats). */
function pyNum(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}

/** Python's type name of a JSON value: `<class 'float'>`, or bare `float` when asClass is false. */
function pyTypeName(v: unknown, asClass = true): string {
  const t = typeof v;
  const name =
    v === null ? 'NoneType' : t === 'number' ? 'float' : t === 'string' ? 'str' : t === 'boolean' ? 'bool' : Array.isArray(v) ? 'list' : 'dict';
  return asClass ? `<class '${name}'>` : name;
}
