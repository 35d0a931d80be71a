// Helpers over EngineClient.generate() streams: merging the streams of several prompts into
// one, and folding a stream into per-choice final state (the non-streaming path drains the
// same generator the streaming path forwards).

import { setMaxListeners } from 'node:events';
import { OpenAIHttpError } from './openai-error';
import { randomRequestId } from './ids';
import { beamSearch } from '../engine/beam-search';
import { OUTPUT_KIND, type EngineClient, type EngineRequest, type OutputKind, type PositionLogprobs, type RequestOutput, type SequenceReservation, type StructuredOutputsParams } from '../engine/types';
import { reserveRoomFor } from './engine-requests';
import { withSourceParam } from './structured-outputs';
import { takeTurn } from './yield-budget';

/**
 * Interleaves several async iterables as their items arrive; tagged with the source index. Each
 * item costs O(1) whatever the number of sources (a request may carry thousands of prompts):
 * settled pulls land in a queue instead of being raced against every pending one.
 */
export async function* mergeStreams<T>(streams: AsyncIterable<T>[]): AsyncGenerator<{ source: number; item: T }> {
  if (streams.length === 1) {
    // One prompt (the usual request): nothing to interleave, so no queue and no wake promise per
    // item (docs/perf/sse.md).
    for await (const item of streams[0]) yield { source: 0, item };
    return;
  }
  const iterators = streams.map((s) => s[Symbol.asyncIterator]());
  const settled: Array<{ source: number; result: IteratorResult<T> }> = [];
  let head = 0;
  let failure: { error: unknown } | null = null;
  let wake: (() => void) | null = null;
  const notify = (): void => {
    const w = wake;
    wake = null;
    w?.();
  };
  const pull = (source: number): void => {
    iterators[source].next().then(
      (result) => {
        settled.push({ source, result });
        notify();
      },
      (error: unknown) => {
        failure ??= { error };
        notify();
      },
    );
  };
  iterators.forEach((_, i) => pull(i));
  let open = iterators.length;
  try {
    while (open > 0) {
      if (failure) throw (failure as { error: unknown }).error;
      if (head === settled.length) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const { source, result } = settled[head++];
      if (head > 1024 && head * 2 > settled.length) {
        settled.splice(0, head);
        head = 0;
      }
      if (result.done) {
        open--;
        continue;
      }
      pull(source);
      yield { source, item: result.value };
    }
  } finally {
    // A consumer that stops early (client gone, error) closes every source so the engine aborts them.
    await Promise.allSettled(iterators.map(async (it) => it.return?.()));
  }
}

/** One choice of one prompt, as it stands after folding the stream. */
interface ChoiceState {
  index: number;
  text: string;
  tokenIds: number[];
  logprobs: PositionLogprobs[];
  finishReason: string | null;
  stopReason: string | number | null;
}

export interface PromptResult {
  promptTokenIds: number[];
  promptLogprobs: (PositionLogprobs | null)[] | null;
  numCachedTokens: number;
  choices: ChoiceState[];
  /** The engine's kv_transfer_params for the response (a prefill's blocks to pull), when its KV connector set any. */
  kvTransferParams?: Record<string, unknown>;
}

/** The engine's finish_reason 'error' becomes a 500 (vLLM's GenerationError). */
export function throwIfGenerationError(output: RequestOutput): void {
  const failed = output.outputs.find((o) => o.finishReason === 'error');
  if (failed) throw new OpenAIHttpError(500, output.error ?? 'Internal server error during generation.');
}

/**
 * Applies one RequestOutput to the running state: deltas are appended, cumulative/final replace.
 * A stream passes `keepLogprobs` false: each chunk carried its logprobs, so holding them all
 * would only grow the request's memory with every token.
 */
export function foldOutput(state: PromptResult, output: RequestOutput, kind: OutputKind, keepLogprobs = true): void {
  throwIfGenerationError(output);
  state.promptTokenIds = output.promptTokenIds;
  if (output.promptLogprobs) state.promptLogprobs = output.promptLogprobs;
  state.numCachedTokens = output.numCachedTokens;
  if (output.kvTransferParams) state.kvTransferParams = output.kvTransferParams;
  for (const o of output.outputs) {
    let choice = state.choices.find((c) => c.index === o.index);
    if (!choice) {
      choice = { index: o.index, text: '', tokenIds: [], logprobs: [], finishReason: null, stopReason: null };
      state.choices.push(choice);
    }
    if (kind === OUTPUT_KIND.DELTA) {
      choice.text += o.text;
      choice.tokenIds.push(...o.tokenIds);
      if (o.logprobs && keepLogprobs) choice.logprobs.push(...o.logprobs);
    } else {
      choice.text = o.text;
      choice.tokenIds = [...o.tokenIds];
      choice.logprobs = o.logprobs && keepLogprobs ? [...o.logprobs] : [];
    }
    choice.finishReason = o.finishReason ?? choice.finishReason;
    choice.stopReason = o.stopReason ?? choice.stopReason;
  }
}

async function drain(stream: AsyncIterable<RequestOutput>, kind: OutputKind): Promise<PromptResult> {
  const state: PromptResult = { promptTokenIds: [], promptLogprobs: null, numCachedTokens: 0, choices: [] };
  for await (const output of stream) foldOutput(state, output, kind);
  state.choices.sort((a, b) => a.index - b.index);
  return state;
}

/**
 * The engine's stream for a request. The engine id gets a random suffix (as vLLM does) so two
 * clients sending the same X-Request-Id / request_id never collide; responses keep the plain id.
 * Beam search runs as a search over one-token steps and yields its final result once.
 */
export function generateFor(engine: EngineClient, request: EngineRequest, signal?: AbortSignal, reservation?: SequenceReservation): AsyncIterable<RequestOutput> {
  const unique = { ...request, requestId: `${request.requestId}-${randomRequestId().slice(0, 8)}` };
  const outputs = request.params.use_beam_search
    ? (async function* () {
        yield await beamSearch(engine, unique, signal, reservation);
      })()
    : engine.generate(unique, signal, reservation);
  const so = request.params.structured_outputs;
  return so ? renamingErrors(outputs, so) : outputs;
}

async function* renamingErrors(outputs: AsyncIterable<RequestOutput>, so: StructuredOutputsParams): AsyncGenerator<RequestOutput> {
  try {
    yield* outputs;
  } catch (err) {
    throw withSourceParam(err, so);
  }
}

/**
 * Runs every engine request of a prepared request to the end, concurrently. When one fails
 * (or the client leaves) the others are aborted too, so no orphan keeps the batch busy.
 */
export async function drainAll(
  engine: EngineClient,
  requests: EngineRequest[],
  kinds: OutputKind[],
  signal?: AbortSignal,
): Promise<PromptResult[]> {
  const reservation = reserveRoomFor(engine, requests);
  const group = new AbortController();
  // Each engine request listens to the group signal until it ends: one listener per prompt.
  setMaxListeners(requests.length + 1, group.signal);
  const abortGroup = () => group.abort(signal?.reason);
  if (signal?.aborted) abortGroup();
  signal?.addEventListener('abort', abortGroup, { once: true });
  try {
    // Thousands of prompts are handed to the engine a few milliseconds' worth per event-loop turn.
    const results: Array<Promise<PromptResult>> = [];
    for (const [i, request] of requests.entries()) {
      await takeTurn();
      const result = drain(generateFor(engine, request, group.signal, reservation), kinds[i]);
      // Handled by Promise.all below; until then a failure must not count as unhandled.
      result.catch(() => undefined);
      results.push(result);
    }
    return await Promise.all(results);
  } catch (err) {
    group.abort(err);
    throw err;
  } finally {
    signal?.removeEventListener('abort', abortGroup);
    reservation.release();
  }
}
