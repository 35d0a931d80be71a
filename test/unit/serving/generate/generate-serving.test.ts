// GenerateServing against a scripted engine: validation (400/404), request ids, response and
// chunk shapes in both output modes. The HTTP layer is covered by the e2e tests.

import { resolveServerConfig, type ServerConfig } from '../../../../src/config/server-config';
import { createBuiltinTokenizer } from '../../../../src/model/tokenizer';
import { GenerateServing, generateServingOptions } from '../../../../src/serving/generate/generate-serving';
import type { GenerateRequest, GenerateStreamResponse } from '../../../../src/serving/generate/generate-types';
import { FakeEngine } from '../../../helpers/fake-engine';

const tokenizer = createBuiltinTokenizer();
const HELLO = [...Buffer.from('Hello world. Bye.')];

function setup(flags: Partial<ServerConfig> = {}, engineOpts: Partial<ConstructorParameters<typeof FakeEngine>[0]> = {}) {
  const config = resolveServerConfig({ servedModelNames: ['m'], maxNumSeqs: 4, ...flags }, {});
  const engine = new FakeEngine({ tokenizer: config.skipTokenizerInit ? null : tokenizer, script: HELLO, ...engineOpts });
  return { engine, service: new GenerateServing(engine, generateServingOptions(config)) };
}

function body(extra: Partial<GenerateRequest> = {}): GenerateRequest {
  return { token_ids: [72, 105], sampling_params: { max_tokens: 5, temperature: 0 }, ...extra };
}

async function collect(it: AsyncIterable<GenerateStreamResponse>): Promise<GenerateStreamResponse[]> {
  const out: GenerateStreamResponse[] = [];
  for await (const c of it) out.push(c);
  return out;
}

/** The stream's chunks, calling `abort` once `after` of them have arrived. */
async function collectAborting(it: AsyncIterable<GenerateStreamResponse>, after: number, abort: () => void): Promise<GenerateStreamResponse[]> {
  const chunks: GenerateStreamResponse[] = [];
  for await (const chunk of it) {
    chunks.push(chunk);
    if (chunks.length === after) abort();
  }
  return chunks;
}

function expectBadRequest(fn: () => unknown, param: string, message: RegExp): void {
  try {
    fn();
  } catch (err) {
    const e = err as { status?: number; param?: string; message: string; name: string };
    expect(e.status ?? 400).toBe(400);
    expect(e.param).toBe(param);
    expect(e.message).toMatch(message);
    return;
  }
  throw new Error('expected a 400');
}

describe('GenerateServing: tokens mode', () => {
  it('returns token ids only, echoing output_mode, with usage and weight versions', async () => {
    const { service, engine } = setup();
    const res = await service.complete(service.prepare(body({ request_id: 'abc' }), 'abc'));
    expect(Object.keys(res).sort()).toEqual(
      ['choices', 'created', 'ec_transfer_params', 'kv_transfer_params', 'metrics', 'mm_placeholders', 'model', 'output_mode',
        'prompt_logprobs', 'prompt_token_ids', 'request_id', 'usage'].sort(),
    );
    expect(res.request_id).toBe('generate-tokens-abc');
    expect(res.output_mode).toBe('tokens');
    expect(res.model).toBe('m');
    expect(res.choices).toEqual([
      {
        index: 0,
        finish_reason: 'length',
        token_ids: HELLO.slice(0, 5),
        logprobs: null,
        routed_experts: null,
        sampling_mask: null,
        weight_versions: [{ version: 'default', start: 0, end: 5 }],
      },
    ]);
    expect(res.usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7, prompt_tokens_details: null });
    expect(engine.requests[0].requestId).toBe('generate-tokens-abc');
  });

  it('prefixes the request id base with generate-tokens-', () => {
    const { service } = setup();
    expect(service.prepare(body({ request_id: 'abc' }), 'hdr').job.requestId).toBe('generate-tokens-hdr');
  });

  it('generates up to the context limit when max_tokens is absent, and honours it when sent', () => {
    const { service } = setup({}, { maxModelLen: 64 });
    expect(service.prepare(body({ sampling_params: {} }), 'id').engineRequest.params.max_tokens).toBe(62);
    expect(service.prepare(body({ sampling_params: { max_tokens: 3 } }), 'id').engineRequest.params.max_tokens).toBe(3);
    // min_tokens is checked against that budget, not against the struct default of 16.
    expect(service.prepare(body({ sampling_params: { min_tokens: 20 } }), 'id').engineRequest.params.min_tokens).toBe(20);
  });

  it('formats logprobs with token ids, the sampled token first', async () => {
    const { service } = setup();
    const res = await service.complete(service.prepare(body({ sampling_params: { max_tokens: 1, logprobs: 2 } }), 'id'));
    expect(res.choices[0].logprobs).toEqual({
      content: [
        {
          token_id: HELLO[0],
          logprob: -0.75,
          rank: 7,
          top_logprobs: [
            { token_id: HELLO[0], logprob: -0.75, rank: 7 },
            { token_id: 0, logprob: -0.25, rank: 1 },
          ],
        },
      ],
    });
  });

  it('passes kv_transfer_params to the engine, returns only what its KV connector set (vLLM: no echo), and prompt token ids with return_token_ids', async () => {
    const { service } = setup();
    const prepared = service.prepare(body({ kv_transfer_params: { do_remote_decode: true }, return_token_ids: true }), 'id');
    expect(prepared.engineRequest.kvTransferParams).toEqual({ do_remote_decode: true });
    const res = await service.complete(prepared);
    expect(res.kv_transfer_params).toBeNull();
    expect(res.prompt_token_ids).toEqual([72, 105]);
  });

  it('streams token deltas, prompt ids on the first chunk, weight versions on the last, then usage', async () => {
    const { service } = setup();
    const chunks = await collect(
      service.stream(
        service.prepare(
          body({ stream: true, return_token_ids: true, stream_options: { include_usage: true, continuous_usage_stats: true } }),
          'id',
        ),
      ),
    );
    const usage = chunks.pop()!;
    expect(usage).toEqual({
      request_id: chunks[0].request_id,
      output_mode: 'tokens',
      choices: [],
      usage: { prompt_tokens: 2, completion_tokens: 5, total_tokens: 7, prompt_tokens_details: null },
    });
    expect(chunks.flatMap((c) => c.choices[0].token_ids)).toEqual(HELLO.slice(0, 5));
    expect(chunks.every((c) => c.output_mode === 'tokens' && c.choices.length === 1 && !('text' in c.choices[0]))).toBe(true);
    expect(chunks[0].prompt_token_ids).toEqual([72, 105]);
    expect(chunks.slice(1).every((c) => c.prompt_token_ids === null)).toBe(true);
    expect(chunks.map((c) => c.usage?.completion_tokens)).toEqual([1, 2, 3, 4, 5]);
    expect(chunks.map((c) => c.choices[0].finish_reason)).toEqual([null, null, null, null, 'length']);
    expect(chunks.map((c) => c.choices[0].weight_versions)).toEqual([null, null, null, null, [{ version: 'default', start: 0, end: 5 }]]);
  });
});

describe('GenerateServing: text mode', () => {
  it('adds the text, cut at a stop string, while token_ids keep every token', async () => {
    const { service } = setup();
    const res = await service.complete(
      service.prepare(body({ output_mode: 'text', sampling_params: { max_tokens: 12, stop: ['wor'] } }), 'id'),
    );
    expect(res.output_mode).toBe('text');
    expect(res.choices[0].text).toBe('Hello ');
    expect(res.choices[0].finish_reason).toBe('stop');
    expect(tokenizer.decode(res.choices[0].token_ids)).toBe('Hello wor');
  });

  it('streams text deltas without ever leaking a partial stop string', async () => {
    const { service } = setup({}, { stepDelayMs: 1 });
    const prepared = service.prepare(body({ output_mode: 'text', stream: true, sampling_params: { max_tokens: 30, stop: ['d. B'] } }), 'x');
    const chunks = await collect(service.stream(prepared));
    expect(chunks.map((c) => c.choices[0].text).join('')).toBe('Hello worl');
    expect(chunks.every((c) => c.output_mode === 'text')).toBe(true);
    const last = chunks[chunks.length - 1].choices[0];
    expect(last.finish_reason).toBe('stop');
    expect(chunks.flatMap((c) => c.choices[0].token_ids)).toEqual(HELLO.slice(0, 14));
  });

  it('sends the final chunk of an abort (finish_reason, held-back text) even without new token ids', async () => {
    const { service, engine } = setup({}, { stepDelayMs: 5 });
    const prepared = service.prepare(body({ output_mode: 'text', stream: true, sampling_params: { max_tokens: 100, stop: ['zzzz'] } }), 'ab');
    const chunks = await collectAborting(service.stream(prepared), 6, () => engine.abort(['generate-tokens-ab']));
    const last = chunks[chunks.length - 1].choices[0];
    expect(last.finish_reason).toBe('abort');
    expect(last.token_ids).toEqual([]);
    // The 3 characters held back for the stop string arrive with the abort.
    expect(last.text).toBe('lo ');
    expect(chunks.map((c) => c.choices[0].text).join('')).toBe('Hello ');
  });

  it('in tokens mode too, an aborted stream ends with a finish_reason "abort" chunk (the legacy /abort_requests path)', async () => {
    const { service, engine } = setup({}, { stepDelayMs: 5 });
    const prepared = service.prepare(body({ stream: true, sampling_params: { max_tokens: 100 } }), 'tk');
    const chunks = await collectAborting(service.stream(prepared), 3, () => engine.abort(['generate-tokens-tk']));
    const last = chunks[chunks.length - 1].choices[0];
    expect(last.finish_reason).toBe('abort');
    expect(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
  });

  it('gives OpenAI logprobs with decoded tokens and bytes, or token_id:N with --return-tokens-as-token-ids', async () => {
    const { service } = setup();
    const res = await service.complete(service.prepare(body({ output_mode: 'text', sampling_params: { max_tokens: 1, logprobs: 1 } }), 'id'));
    expect(res.choices[0].logprobs).toEqual({
      content: [{ token: 'H', logprob: -0.75, bytes: [72], top_logprobs: [{ token: '\u0000', logprob: -0.25, bytes: [0] }] }],
    });
    const asIds = setup({ returnTokensAsTokenIds: true }).service;
    const res2 = await asIds.complete(asIds.prepare(body({ output_mode: 'text', sampling_params: { max_tokens: 1, logprobs: 0 } }), 'id'));
    expect(res2.choices[0].logprobs).toEqual({
      content: [{ token: 'token_id:72', logprob: -0.75, bytes: [...Buffer.from('token_id:72')], top_logprobs: [] }],
    });
  });
});

describe('GenerateServing: rejected requests', () => {
  it('refuses output_mode text without a tokenizer', () => {
    const { service } = setup({ skipTokenizerInit: true });
    expectBadRequest(() => service.prepare(body({ output_mode: 'text' }), 'id'), 'output_mode', /tokenizer/);
  });

  it('refuses output_mode text with detokenize false', () => {
    const { service } = setup();
    expectBadRequest(
      () => service.prepare(body({ output_mode: 'text', sampling_params: { detokenize: false } }), 'id'),
      'sampling_params.detokenize',
      /detokenize/,
    );
  });

  it('refuses stop strings on --tokens-only and turns detokenization off there', () => {
    const { service } = setup({ tokensOnly: true });
    expectBadRequest(() => service.prepare(body({ sampling_params: { stop: ['x'] } }), 'id'), 'sampling_params.stop', /stop_token_ids/);
    expect(service.prepare(body(), 'id').engineRequest.params.detokenize).toBe(false);
    expectBadRequest(() => service.prepare(body({ sampling_params: { bad_words: ['x'] } }), 'id'), 'sampling_params.bad_words', /tokenizer/);
  });

  it('refuses n over max_num_seqs', () => {
    const { service } = setup({ maxNumSeqs: 2 });
    expectBadRequest(
      () => service.prepare(body({ sampling_params: { n: 3, temperature: 1 } }), 'id'),
      'n',
      /sampling_params.n must be at most the server's max_num_seqs \(2\), got 3/,
    );
  });

  it('answers 404 for an unknown model', () => {
    const { service } = setup();
    expect(() => service.prepare(body({ model: 'nope' }), 'id')).toThrow('The model `nope` does not exist.');
  });

  it('refuses out-of-vocabulary prompt ids and a priority without priority scheduling', () => {
    const { service } = setup();
    expectBadRequest(() => service.prepare(body({ token_ids: [1, 99999] }), 'id'), 'token_ids', /out of vocabulary/);
    expectBadRequest(() => service.prepare(body({ priority: 1 }), 'id'), 'priority', /Priority scheduling/);
  });
});
