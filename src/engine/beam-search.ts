// Beam search on top of an EngineClient (vLLM `EngineClient.beam_search`): at every step
// each live beam's full token sequence is sent as a one-token request asking for
// 2 * beam_width logprobs; every candidate extends its beam's cumulative logprob, and the
// best beam_width candidates (by length-penalised score) survive. A beam ends when it
// draws EOS (unless ignore_eos) or a stop token id, or when its text hits a stop string.
// Prefix caching makes re-sending the growing prefixes cheap.
//
// How the engine / serving layer uses it:
//   if (params.use_beam_search) final = await beamSearch(engineClient, request, signal);
// It returns one RequestOutput (finished) whose outputs are the n best beams, best first.

import type {
  CompletionOutput,
  EngineClient,
  EngineRequest,
  FinishReason,
  PositionLogprobs,
  RequestOutput,
  SamplingParams,
  SequenceReservation,
} from './types';
import { OUTPUT_KIND } from './types';
import { findStopString } from './detokenizer/stop-strings';
import { defaultSamplingParams } from './sampling-params';

interface Beam {
  /** Prompt + generated tokens. */
  tokens: number[];
  logprobs: PositionLogprobs[];
  cumLogprob: number;
  finishReason: FinishReason | null;
  stopReason: string | number | null;
  /** Text cut at a stop string, when one ended the beam. */
  text?: string;
}

/**
 * vLLM `get_beam_search_score`: cumulative logprob / (length ** length_penalty), where the
 * length counts the prompt and leaves out a final EOS.
 */
export function beamScore(tokens: readonly number[], cumLogprob: number, eosTokenId: number | null, lengthPenalty: number): number {
  let len = tokens.length;
  if (eosTokenId != null && tokens[len - 1] === eosTokenId) len -= 1;
  return cumLogprob / Math.pow(len, lengthPenalty);
}

export async function beamSearch(engine: EngineClient, request: EngineRequest, signal?: AbortSignal, reservation?: SequenceReservation): Promise<RequestOutput> {
  const params = request.params;
  const prompt = request.promptTokenIds;
  const beamWidth = params.n;
  const tokenizer = engine.tokenizer;
  const eos = engine.eosTokenIds.length > 0 ? engine.eosTokenIds[0] : (tokenizer?.eosTokenId ?? null);
  const stopIds = new Set(params.stop_token_ids);
  const maxTokens = Math.min(params.max_tokens ?? Infinity, engine.maxModelLen - prompt.length);
  const score = (b: Beam) => beamScore(b.tokens, b.cumLogprob, eos, params.length_penalty);
  const byScore = (a: Beam, b: Beam) => score(b) - score(a);

  // Like vLLM, each step is a plain one-token request at the beam's temperature: the
  // candidates come from the raw logprobs, so other processors would not change them.
  const stepParams: SamplingParams = {
    ...defaultSamplingParams(),
    temperature: params.temperature,
    max_tokens: 1,
    logprobs: 2 * beamWidth,
    ignore_eos: true, // the search decides on EOS itself
    detokenize: false,
    output_kind: OUTPUT_KIND.FINAL_ONLY,
  };

  let live: Beam[] = [{ tokens: [...prompt], logprobs: [], cumLogprob: 0, finishReason: null, stopReason: null }];
  const completed: Beam[] = [];
  let aborted = false;

  for (let step = 0; step < maxTokens && live.length > 0; step++) {
    if (signal?.aborted) {
      aborted = true;
      break;
    }
    const results = await Promise.all(
      live.map((beam, i) =>
        lastOutput(
          engine.generate(
            {
              requestId: `${request.requestId}-beam-${step}-${i}`,
              promptTokenIds: beam.tokens,
              params: stepParams,
              priority: request.priority,
              cacheSalt: request.cacheSalt,
              lora: request.lora,
              arrivalTime: request.arrivalTime,
              // The images' runs lie in the prompt, which every beam's tokens start with.
              ...(request.multiModal ? { multiModal: request.multiModal } : {}),
            },
            signal,
            reservation,
          ),
        ),
      ),
    );

    const candidates: Beam[] = [];
    results.forEach((result, i) => {
      const beam = live[i];
      const out = result?.outputs[0];
      if (!out || out.finishReason === 'abort' || out.finishReason === 'error') {
        if (out?.finishReason === 'error') throw new Error(result?.error ?? 'beam search step failed');
        aborted = true;
        return;
      }
      const position = out.logprobs?.[0];
      if (!position) return;
      const seen = new Set<number>();
      for (const entry of [...position.top, position.chosen]) {
        if (seen.has(entry.tokenId)) continue;
        seen.add(entry.tokenId);
        const next: Beam = {
          tokens: [...beam.tokens, entry.tokenId],
          logprobs: [...beam.logprobs, position],
          cumLogprob: beam.cumLogprob + entry.logprob,
          finishReason: null,
          stopReason: null,
        };
        if (entry.tokenId === eos && !params.ignore_eos) {
          completed.push({ ...next, finishReason: 'stop', stopReason: null });
        } else if (stopIds.has(entry.tokenId)) {
          completed.push({ ...next, finishReason: 'stop', stopReason: entry.tokenId });
        } else if (params.stop.length > 0 && tokenizer) {
          const text = decodeOutput(next.tokens.slice(prompt.length), params, tokenizer);
          const match = findStopString(text, text.length, params.stop, params.include_stop_str_in_output);
          if (match) {
            const cut = match.truncateTo === -1 ? text : text.slice(0, match.truncateTo);
            completed.push({ ...next, finishReason: 'stop', stopReason: match.stop, text: cut });
          } else candidates.push(next);
        } else candidates.push(next);
      }
    });
    if (aborted) break;
    candidates.sort(byScore);
    live = candidates.slice(0, beamWidth);
  }

  const best = [...completed, ...live].sort(byScore).slice(0, beamWidth);
  const outputs: CompletionOutput[] = best.map((beam, index) => {
    const generated = beam.tokens.slice(prompt.length);
    // EOS / stop-token text is left out unless include_stop_str_in_output (as the engine does).
    const endsOnStopToken = beam.finishReason === 'stop' && typeof beam.stopReason !== 'string';
    const textTokens = endsOnStopToken && !params.include_stop_str_in_output ? generated.slice(0, -1) : generated;
    const text = beam.text ?? (tokenizer && params.detokenize ? decodeOutput(textTokens, params, tokenizer) : '');
    return {
      index,
      text,
      tokenIds: generated,
      cumulativeLogprob: beam.cumLogprob,
      logprobs: params.logprobs != null ? beam.logprobs : null,
      finishReason: beam.finishReason ?? (aborted ? 'abort' : 'length'),
      stopReason: beam.stopReason,
    };
  });
  return {
    requestId: request.requestId,
    promptTokenIds: [...prompt],
    promptLogprobs: null,
    outputs,
    finished: true,
    numCachedTokens: 0,
  };
}

function decodeOutput(ids: readonly number[], params: SamplingParams, tokenizer: NonNullable<EngineClient['tokenizer']>): string {
  return tokenizer.decode(ids, {
    skipSpecialTokens: params.skip_special_tokens,
    spacesBetweenSpecialTokens: params.spaces_between_special_tokens,
  });
}

async function lastOutput(stream: AsyncIterable<RequestOutput>): Promise<RequestOutput | null> {
  let last: RequestOutput | null = null;
  for await (const out of stream) last = out;
  return last;
}
