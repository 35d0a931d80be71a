// Beam search on a fake EngineClient whose next-token logprobs are scripted per prefix.
import { beamScore, beamSearch } from '../../../src/engine/beam-search';
import { normalizeSamplingParams } from '../../../src/engine/sampling-params';
import type { EngineClient, EngineRequest, RequestOutput, SamplingParams } from '../../../src/engine/types';
import type { Tokenizer } from '../../../src/model/types';

const EOS = 2;
const LETTERS = ['<unk>', '<s>', '</s>', 'a', 'b', 'c', 'd', 'e'];

const tokenizer = {
  vocabSize: LETTERS.length,
  eosTokenId: EOS,
  decode: (ids: readonly number[], opts?: { skipSpecialTokens?: boolean }) =>
    ids.filter((id) => !(opts?.skipSpecialTokens !== false && id <= 2)).map((id) => LETTERS[id]).join(''),
} as unknown as Tokenizer;

type Script = (tokens: readonly number[]) => Partial<Record<number, number>>;

function fakeEngine(script: Script) {
  const requests: EngineRequest[] = [];
  const engine = {
    tokenizer,
    eosTokenIds: [EOS],
    maxModelLen: 100,
    async *generate(request: EngineRequest): AsyncIterable<RequestOutput> {
      requests.push(request);
      const probs = script(request.promptTokenIds);
      const entries = Object.entries(probs)
        .map(([id, p]) => ({ tokenId: Number(id), logprob: Math.log(p!) }))
        .sort((a, b) => b.logprob - a.logprob)
        .map((e, i) => ({ ...e, rank: i + 1 }))
        .slice(0, request.params.logprobs!);
      yield {
        requestId: request.requestId,
        promptTokenIds: request.promptTokenIds,
        promptLogprobs: null,
        outputs: [
          {
            index: 0,
            text: '',
            tokenIds: [entries[0].tokenId],
            cumulativeLogprob: entries[0].logprob,
            logprobs: [{ chosen: entries[0], top: entries }],
            finishReason: 'length',
            stopReason: null,
          },
        ],
        finished: true,
        numCachedTokens: 0,
      };
    },
  } as unknown as EngineClient;
  return { engine, requests };
}

/** Greedy would take 'a' (0.6) then a flat step; the beam finds 'b c' (0.4 × 0.9) then EOS. */
const script: Script = (tokens) => {
  const last = tokens.slice(1).join(',');
  switch (last) {
    case '':
      return { 3: 0.6, 4: 0.4 };
    case '3':
      return { 3: 0.34, 4: 0.33, 5: 0.33 };
    case '4':
      return { 5: 0.9, 6: 0.1 };
    case '4,5':
      return { [EOS]: 0.95, 7: 0.05 };
    default:
      return { 6: 0.5, 7: 0.3, [EOS]: 0.2 };
  }
};

function request(partial: Partial<SamplingParams>): EngineRequest {
  return {
    requestId: 'req',
    promptTokenIds: [1],
    params: normalizeSamplingParams({ use_beam_search: true, n: 2, temperature: 0, max_tokens: 4, ...partial }),
  };
}

describe('beamSearch', () => {
  it('finds the best sequence by cumulative logprob, not the greedy one', async () => {
    const { engine } = fakeEngine(script);
    const out = await beamSearch(engine, request({ logprobs: 0 }));
    expect(out.finished).toBe(true);
    expect(out.outputs).toHaveLength(2);
    const best = out.outputs[0];
    expect(best.tokenIds).toEqual([4, 5, EOS]);
    expect(best.text).toBe('bc');
    expect(best.finishReason).toBe('stop');
    expect(best.stopReason).toBeNull();
    expect(best.cumulativeLogprob).toBeCloseTo(Math.log(0.4) + Math.log(0.9) + Math.log(0.95), 10);
    expect(best.logprobs).toHaveLength(3);
    expect(out.outputs.map((o) => o.index)).toEqual([0, 1]);
    // Sorted best first by the length-penalised score.
    const scores = out.outputs.map((o) => beamScore([1, ...o.tokenIds], o.cumulativeLogprob!, EOS, 1));
    expect(scores[0]).toBeGreaterThanOrEqual(scores[1]);
  });

  it('asks the engine for one token with 2 × beam_width logprobs from each beam prefix', async () => {
    const { engine, requests } = fakeEngine(script);
    await beamSearch(engine, request({ n: 3, temperature: 0.5, truncate_prompt_tokens: 1, presence_penalty: 1 }));
    expect(requests[0].promptTokenIds).toEqual([1]);
    for (const r of requests) {
      expect(r.params).toMatchObject({ max_tokens: 1, logprobs: 6, n: 1, use_beam_search: false, temperature: 0.5 });
      // The growing prefixes must not be truncated or penalised again.
      expect(r.params).toMatchObject({ truncate_prompt_tokens: null, presence_penalty: 0 });
    }
    expect(new Set(requests.map((r) => r.requestId)).size).toBe(requests.length);
    // Step 2 expands every surviving beam from its own prefix.
    expect(requests.slice(1, 3).map((r) => r.promptTokenIds)).toEqual(expect.arrayContaining([[1, 3], [1, 4]]));
  });

  it('length_penalty changes which finished beam wins', async () => {
    // 'a </s>' (0.45) beats 'b c c c' (0.256) on raw logprob, but not once length counts.
    const s: Script = (tokens) => {
      const t = tokens.slice(1).join(',');
      if (t === '') return { 3: 0.5, 4: 0.5 };
      if (t === '3') return { [EOS]: 0.9, 6: 0.1 };
      return { 5: 0.8, [EOS]: 0.01 };
    };
    const short = await beamSearch(fakeEngine(s).engine, request({ length_penalty: 0, max_tokens: 4 }));
    const long = await beamSearch(fakeEngine(s).engine, request({ length_penalty: 3, max_tokens: 4 }));
    expect(short.outputs[0].tokenIds).toEqual([3, EOS]);
    expect(long.outputs[0].tokenIds).toEqual([4, 5, 5, 5]);
    expect(long.outputs[0].finishReason).toBe('length');
  });

  it('ignore_eos keeps EOS as an ordinary token', async () => {
    const out = await beamSearch(fakeEngine(script).engine, request({ ignore_eos: true, max_tokens: 3 }));
    for (const o of out.outputs) {
      expect(o.tokenIds).toHaveLength(3);
      expect(o.finishReason).toBe('length');
    }
    expect(out.outputs[0].tokenIds).toEqual([4, 5, EOS]);
  });

  it('stop_token_ids and stop strings end a beam with their stop_reason', async () => {
    const byId = await beamSearch(fakeEngine(script).engine, request({ stop_token_ids: [5] }));
    expect(byId.outputs[0]).toMatchObject({ tokenIds: [4, 5], finishReason: 'stop', stopReason: 5, text: 'b' });
    const byText = await beamSearch(fakeEngine(script).engine, request({ stop: ['c'] }));
    expect(byText.outputs[0]).toMatchObject({ tokenIds: [4, 5], finishReason: 'stop', stopReason: 'c', text: 'b' });
  });

  it('never generates more than max_tokens', async () => {
    const out = await beamSearch(fakeEngine(() => ({ 6: 0.5, 7: 0.5 })).engine, request({ max_tokens: 2 }));
    for (const o of out.outputs) {
      expect(o.tokenIds).toHaveLength(2);
      expect(o.finishReason).toBe('length');
      expect(o.logprobs).toBeNull(); // logprobs were not asked
    }
  });

  it('an aborted signal ends the search with finish_reason abort', async () => {
    const ctl = new AbortController();
    ctl.abort();
    const out = await beamSearch(fakeEngine(script).engine, request({}), ctl.signal);
    expect(out.outputs[0].finishReason).toBe('abort');
  });
});
