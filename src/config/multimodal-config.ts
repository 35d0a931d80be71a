// The multimodal flags' values (vLLM's MultiModalConfig): --limit-mm-per-prompt, --media-io-kwargs
// and --mm-processor-kwargs, parsed and checked here so the command line and the request fields
// (media_io_kwargs, mm_processor_kwargs) share one set of rules.

/** Items of a modality one prompt may carry when --limit-mm-per-prompt does not name it (vLLM's). */
export const DEFAULT_MM_LIMIT_PER_PROMPT = 999;

/** The options each modality's entry may carry beside `count` (vLLM's *DummyOptions, extra keys forbidden). */
const LIMIT_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  image: ['width', 'height'],
  video: ['num_frames', 'width', 'height'],
  audio: ['length'],
};

/** One modality's limit: how many items, and the profiling sizes vLLM takes from the same entry. */
export interface ModalityLimit {
  count: number;
  options: Record<string, number>;
}

export type MmLimits = Record<string, ModalityLimit>;

/** modality -> keyword arguments of its media loader, e.g. {"image": {"rgba_background_color": [0, 0, 0]}}. */
export type MediaIoKwargs = Record<string, Record<string, unknown>>;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseJson(text: string, flag: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${flag} must be JSON, got '${text}'`);
  }
}

function parseModalityLimit(modality: string, raw: unknown): ModalityLimit {
  const where = `--limit-mm-per-prompt's "${modality}"`;
  const entry = typeof raw === 'number' ? { count: raw } : raw;
  if (!isPlainObject(entry)) throw new Error(`${where} must be a count or an object with "count"`);
  const allowed = LIMIT_OPTIONS[modality] ?? [];
  const options: Record<string, number> = {};
  let count = DEFAULT_MM_LIMIT_PER_PROMPT;
  for (const [key, value] of Object.entries(entry)) {
    if (key !== 'count' && !allowed.includes(key)) {
      throw new Error(`${where} has an unknown option '${key}' (allowed: ${['count', ...allowed].join(', ')})`);
    }
    // count may be 0 (the modality is off); the sizes must be positive (vLLM's ge=0 / gt=0).
    const least = key === 'count' ? 0 : 1;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < least) {
      throw new Error(`${where}.${key} must be an integer >= ${least}`);
    }
    if (key === 'count') count = value;
    else options[key] = value;
  }
  return { count, options };
}

/** --limit-mm-per-prompt: {"image": 2} or {"image": {"count": 2, "width": 512, "height": 512}}. */
export function parseLimitMmPerPrompt(text: string): MmLimits {
  const value = parseJson(text, '--limit-mm-per-prompt');
  if (!isPlainObject(value)) throw new Error('--limit-mm-per-prompt must be a JSON object keyed by modality');
  const limits: MmLimits = {};
  for (const [modality, raw] of Object.entries(value)) limits[modality] = parseModalityLimit(modality, raw);
  return limits;
}

/** How many items of `modality` one prompt may carry by --limit-mm-per-prompt (vLLM's get_limit_per_prompt). */
export function limitPerPrompt(limits: MmLimits, modality: string): number {
  return limits[modality]?.count ?? DEFAULT_MM_LIMIT_PER_PROMPT;
}

/**
 * A media_io_kwargs value (the flag's JSON or the request field): an object of objects keyed by
 * modality. `fail` raises the caller's kind of error (a start-up error or a 400).
 */
export function checkMediaIoKwargs(value: unknown, fail: (message: string) => never, name = 'media_io_kwargs'): MediaIoKwargs {
  if (!isPlainObject(value)) fail(`${name} must be an object keyed by modality, e.g. {"image": {...}}`);
  for (const [modality, kwargs] of Object.entries(value)) {
    if (!isPlainObject(kwargs)) fail(`${name}["${modality}"] must be an object of keyword arguments`);
  }
  return value as MediaIoKwargs;
}

/** --media-io-kwargs. */
export function parseMediaIoKwargs(text: string): MediaIoKwargs {
  return checkMediaIoKwargs(parseJson(text, '--media-io-kwargs'), (message) => {
    throw new Error(message);
  }, '--media-io-kwargs');
}

/** The server's media_io_kwargs under the request's, modality by modality (vLLM's merge_media_io_kwargs). */
export function mergeMediaIoKwargs(defaults: MediaIoKwargs, overrides: MediaIoKwargs | null): MediaIoKwargs {
  if (!overrides) return defaults;
  const merged: MediaIoKwargs = { ...defaults };
  for (const [modality, kwargs] of Object.entries(overrides)) merged[modality] = { ...(defaults[modality] ?? {}), ...kwargs };
  return merged;
}
