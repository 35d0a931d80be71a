// Runs a request's prompts through EngineClient.encode concurrently (the engine packs them into
// shared forwards), with one abort for all: a client that goes away, or one prompt that fails,
// ends the others too. Room for all of them under --max-num-queued-reqs is taken at once first:
// more than the bound is a 400 naming the input field, a busy server a 503 with Retry-After. Long embedding inputs can be chunked and averaged (--pooler-config
// enable_chunked_processing), as vLLM's embedding serving does.

import { OpenAIHttpError } from '../openai-error';
import { randomRequestId } from '../ids';
import { EngineDeadError, EngineOverloadedError, EngineSleepingError, RequestValidationError } from '../../engine/errors';
import { nowMs } from '../../engine/clock';
import type { EngineClient, PoolingRequestOutput } from '../../engine/types';
import type { PoolingPrompt } from './pooling-input';

export interface EncodeOptions {
  /** Base of the engine request ids (`<base>-<i>`). */
  requestId: string;
  priority: number;
  signal?: AbortSignal;
  /** Prompts longer than this run as chunks of this size whose vectors are averaged, weighted by length. */
  chunkSize?: number | null;
  /** The request field holding the inputs (the `param` of a 400 for too many); default 'input'. */
  inputParam?: string;
}

/** One pooled output per prompt, in order; promptTokenIds are the whole prompt's even when chunked. */
export async function encodeAll(engine: EngineClient, prompts: readonly PoolingPrompt[], opts: EncodeOptions): Promise<PoolingRequestOutput[]> {
  const parts = prompts.map((prompt) => chunk(prompt, opts.chunkSize ?? null));
  const reservation = engine.reserve(
    parts.reduce((n, p) => n + p.length, 0),
    opts.inputParam ?? 'input',
  );
  // One engine call (the common case) follows the request's own signal: a group controller and its
  // listeners cost the HTTP thread ~20-30 us a request at concurrency 1 and end nothing else.
  const group = parts.length !== 1 || parts[0].length > 1 ? new AbortController() : null;
  const signal = group ? group.signal : opts.signal;
  const abortGroup = () => group?.abort(opts.signal?.reason);
  if (group) {
    if (opts.signal?.aborted) abortGroup();
    opts.signal?.addEventListener('abort', abortGroup, { once: true });
  }
  const arrivalTime = nowMs();
  // A random suffix keeps two clients that send the same X-Request-Id apart in the engine.
  const suffix = randomRequestId().slice(0, 8);
  try {
    return await Promise.all(
      prompts.map(async (prompt, i) => {
        const id = `${opts.requestId}-${i}-${suffix}`;
        const chunks = parts[i];
        const outputs = await Promise.all(
          chunks.map((part, c) =>
            engine.encode(
              { requestId: chunks.length > 1 ? `${id}-chunk-${c}` : id, promptTokenIds: part.tokenIds, tokenTypeIds: part.tokenTypeIds, priority: opts.priority, arrivalTime },
              signal,
              reservation,
            ),
          ),
        );
        return { requestId: id, promptTokenIds: prompt.tokenIds, data: weightedMean(outputs) };
      }),
    );
  } catch (err) {
    group?.abort(err);
    throw asHttpError(err);
  } finally {
    if (group) opts.signal?.removeEventListener('abort', abortGroup);
    reservation.release();
  }
}

function chunk(prompt: PoolingPrompt, size: number | null): PoolingPrompt[] {
  if (size === null || prompt.tokenIds.length <= size) return [prompt];
  const parts: PoolingPrompt[] = [];
  for (let at = 0; at < prompt.tokenIds.length; at += size) {
    parts.push({ tokenIds: prompt.tokenIds.slice(at, at + size), tokenTypeIds: prompt.tokenTypeIds?.slice(at, at + size) ?? null });
  }
  return parts;
}

/** Mean of the chunks' MEAN-pooled vectors weighted by their lengths = the mean over every token's state. */
function weightedMean(outputs: PoolingRequestOutput[]): Float32Array {
  if (outputs.length === 1) return outputs[0].data;
  const out = new Float32Array(outputs[0].data.length);
  let total = 0;
  for (const { data, promptTokenIds } of outputs) {
    const weight = promptTokenIds.length;
    for (let i = 0; i < out.length; i++) out[i] += data[i] * weight;
    total += weight;
  }
  for (let i = 0; i < out.length; i++) out[i] /= total;
  return out;
}

/** A failed forward pass is the server's fault (500); refused requests keep their 400 or 503. */
function asHttpError(err: unknown): unknown {
  const refused = [RequestValidationError, EngineDeadError, EngineOverloadedError, EngineSleepingError, OpenAIHttpError];
  if (refused.some((type) => err instanceof type)) return err;
  return new OpenAIHttpError(500, err instanceof Error ? err.message : String(err));
}
