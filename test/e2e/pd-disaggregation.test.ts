// Prefill/decode disaggregation with real processes on loopback: two ortllm replicas with
// --kv-transfer-config TcpConnector behind a small proxy (bench/pd-proxy.ts, which bench/pd-disaggregation.ts uses too). The pair's
// greedy output equals one replica's; the decode replica pulls the prompt's KV instead of
// computing it; a prefill replica killed before or during the pull costs a local prefill, not a
// wrong answer; prefills never followed by a decode, and aborted decodes, leave no block held.

import * as net from 'node:net';
import OpenAI from 'openai';
import { SERVER_START_TIMEOUT_MS } from '../helpers/server';
import { needs } from '../helpers/needs';
import { startPdProxy, type PdProxy } from '../../bench/pd-proxy';
import { waitFor } from '../helpers/wait';
import { defaultTestModel, startServing, type Serving } from './completions-helpers';

const onModel = needs(defaultTestModel());
const KV = (timeoutS: number) => JSON.stringify({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_port: 0, kv_connector_extra_config: { abort_request_timeout: timeoutS } });
const ARGS = ['--enable-prompt-tokens-details', '--max-model-len', '256', '--enable-scale-out'];
const STORY = 'Once upon a time, there was a little girl named Lily. She loved to play with her toys and her friends. One day, she went to the park with her mom and saw a big tree with red apples.';

onModel.describe('prefill/decode disaggregation across two replicas (stories260K)', () => {
  let prefill: Serving;
  let decode: Serving;
  let proxy: PdProxy;
  let client: OpenAI;

  beforeAll(async () => {
    [prefill, decode] = await Promise.all([startServing([...ARGS, '--kv-transfer-config', KV(2)]), startServing([...ARGS, '--kv-transfer-config', KV(30)])]);
    proxy = await startPdProxy({ prefillUrl: prefill.server.baseUrl, decodeUrl: decode.server.baseUrl });
    client = new OpenAI({ baseURL: `${proxy.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await proxy?.close();
    await Promise.all([prefill?.server.stop(), decode?.server.stop()]);
  });

  it('completions: the pair answers as one replica does, and the decode replica pulls the prompt instead of computing it', async () => {
    const request = { model: prefill.model, prompt: STORY, max_tokens: 24, temperature: 0 };
    const single = await prefill.client.completions.create(request);
    const cachedBefore = await decode.metric('vllm:prompt_tokens_cached_total');
    const pullsBefore = await decode.metric('vllm:nixl_xfer_time_seconds_count');
    const bySource = (source: string) => decode.metric('vllm:prompt_tokens_by_source_total', `source="${source}"`);
    const [externalBefore, computedBefore] = [await bySource('external_kv_transfer'), await bySource('local_compute')];
    const bytesBefore = await decode.metric('vllm:nixl_bytes_transferred_sum');
    const paired = await client.completions.create(request);
    expect(paired.choices[0].text).toBe(single.choices[0].text);
    const promptTokens = single.usage!.prompt_tokens;
    // Every prompt token but the last came over the wire (vLLM recomputes the last for its logits).
    expect(paired.usage!.prompt_tokens_details?.cached_tokens).toBe(promptTokens - 1);
    expect((await decode.metric('vllm:prompt_tokens_cached_total')) - cachedBefore).toBe(promptTokens - 1);
    expect((await bySource('external_kv_transfer')) - externalBefore).toBe(promptTokens - 1);
    expect((await bySource('local_compute')) - computedBefore).toBe(1);
    expect(proxy.lastParams).toMatchObject({ do_remote_prefill: true, do_remote_decode: false, remote_host: '127.0.0.1', tp_size: 1 });
    expect((proxy.lastParams!.remote_block_ids as number[]).length).toBe(Math.ceil(promptTokens / 16));
    // vLLM's NIXL transfer metrics: one pull, of whole blocks.
    expect((await decode.metric('vllm:nixl_xfer_time_seconds_count')) - pullsBefore).toBe(1);
    const moved = (await decode.metric('vllm:nixl_bytes_transferred_sum')) - bytesBefore;
    expect(moved).toBeGreaterThan(0);
    expect(moved % Math.ceil(promptTokens / 16)).toBe(0);
    // The decode replica's own response carries no params: nothing of it waits to be pulled.
    expect((paired as unknown as { kv_transfer_params: unknown }).kv_transfer_params).toBeNull();

    const streamed = await client.completions.create({ ...request, prompt: `${STORY} The end.`, stream: true });
    let text = '';
    for await (const chunk of streamed) text += chunk.choices[0]?.text ?? '';
    const reference = await prefill.client.completions.create({ ...request, prompt: `${STORY} The end.` });
    expect(text).toBe(reference.choices[0].text);
  });

  it('chat: the same, streaming and not', async () => {
    const request = { model: prefill.model, messages: [{ role: 'user' as const, content: STORY }], max_tokens: 20, temperature: 0 };
    const single = await prefill.client.chat.completions.create(request);
    const paired = await client.chat.completions.create(request);
    expect(paired.choices[0].message.content).toBe(single.choices[0].message.content);
    expect(paired.usage!.prompt_tokens_details?.cached_tokens).toBe(single.usage!.prompt_tokens - 1);
    const other = { ...request, messages: [{ role: 'user' as const, content: `${STORY} Then it rained.` }] };
    const stream = await client.chat.completions.create({ ...other, stream: true });
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta?.content ?? '';
    expect(content).toBe((await prefill.client.chat.completions.create(other)).choices[0].message.content);
  });

  it('/inference/v1/generate carries the same kv_transfer_params (tokens in, tokens out)', async () => {
    const tokenIds = (await prefill.post('/tokenize', { model: prefill.model, prompt: `${STORY} The sun set.` })).json.tokens as number[];
    const body = { model: prefill.model, token_ids: tokenIds, sampling_params: { max_tokens: 12, temperature: 0 } };
    const reference = await prefill.post('/inference/v1/generate', body);
    const prefilled = await prefill.post('/inference/v1/generate', { ...body, sampling_params: { max_tokens: 1, temperature: 0 }, kv_transfer_params: { do_remote_decode: true } });
    expect(prefilled.json.kv_transfer_params).toMatchObject({ do_remote_prefill: true, remote_block_ids: expect.any(Array) });
    const decoded = await decode.post('/inference/v1/generate', { ...body, kv_transfer_params: prefilled.json.kv_transfer_params });
    expect(decoded.status).toBe(200);
    expect(decoded.json.choices[0].token_ids).toEqual(reference.json.choices[0].token_ids);
    expect(decoded.json.usage.prompt_tokens_details.cached_tokens).toBe(tokenIds.length - 1);
  });

  it('the Responses API returns the params of a prefill too', async () => {
    const res = await prefill.post('/v1/responses', { model: prefill.model, input: STORY, max_output_tokens: 1, kv_transfer_params: { do_remote_decode: true } });
    expect(res.status).toBe(200);
    expect(res.json.kv_transfer_params).toMatchObject({ do_remote_prefill: true, do_remote_decode: false, remote_engine_id: expect.any(String) });
  });

  it('refuses what it cannot disaggregate with a 400 naming kv_transfer_params', async () => {
    const body = { model: prefill.model, prompt: STORY, max_tokens: 4, n: 2, kv_transfer_params: { do_remote_decode: true } };
    const n = await prefill.post('/v1/completions', body);
    expect(n.status).toBe(400);
    expect(n.json.error.param).toBe('kv_transfer_params');
    const remote = { do_remote_prefill: true, remote_engine_id: 'e', remote_request_id: 'r', remote_host: '127.0.0.1', remote_port: 1, remote_block_ids: [0] };
    const logprobs = await decode.post('/v1/completions', { model: prefill.model, prompt: STORY, max_tokens: 4, prompt_logprobs: 1, kv_transfer_params: remote });
    expect(logprobs.status).toBe(400);
    expect(logprobs.json.error.message).toContain('prompt_logprobs');
    const bad = await decode.post('/v1/completions', { model: prefill.model, prompt: STORY, max_tokens: 4, kv_transfer_params: { ...remote, remote_port: 'x' } });
    expect(bad.status).toBe(400);
    const batch = await prefill.post('/v1/completions', { model: prefill.model, prompt: [STORY, STORY], max_tokens: 1, kv_transfer_params: { do_remote_decode: true } });
    expect(batch.status).toBe(400);
    expect(batch.json.error.param).toBe('kv_transfer_params');
  });

  it('a decode whose producer is gone (refused, expired, or unknown) prefills locally and answers the same', async () => {
    const request = { model: prefill.model, prompt: `${STORY} A bird sang.`, max_tokens: 16, temperature: 0 };
    const reference = await prefill.client.completions.create(request);
    const remote = { do_remote_prefill: true, remote_engine_id: 'e', remote_request_id: 'nobody', remote_host: '127.0.0.1', remote_port: 1, remote_block_ids: [0] };
    const failedBefore = await decode.metric('vllm:nixl_num_failed_transfers_total');
    const refused = await decode.post('/v1/completions', { ...request, kv_transfer_params: remote });
    expect(refused.status).toBe(200);
    expect(refused.json.choices[0].text).toBe(reference.choices[0].text);
    expect((await decode.metric('vllm:nixl_num_failed_transfers_total')) - failedBefore).toBe(1);
    // The notice comes from the engine thread through the server's stderr: it may trail the answer.
    await waitFor(() => decode.server.output().includes('prefilling it here'), 10_000, 'the fallback notice');
  });

  it('a decode waiting on a silent producer counts as deferred, and its abort frees everything', async () => {
    const silent = net.createServer((socket) => socket.on('error', () => undefined));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      const remote = { do_remote_prefill: true, remote_engine_id: 'e', remote_request_id: 'r', remote_host: '127.0.0.1', remote_port: port, remote_block_ids: [0] };
      const controller = new AbortController();
      const pending = fetch(`${decode.server.baseUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: prefill.model, prompt: `${STORY} Waiting.`, max_tokens: 8, stream: true, kv_transfer_params: remote }),
        signal: controller.signal,
      }).catch(() => null);
      await waitFor(async () => (await decode.metric('vllm:num_requests_waiting_by_reason', 'reason="deferred"')) === 1, 10_000, 'a deferred request');
      expect(await decode.metric('vllm:kv_cache_usage_perc')).toBeGreaterThan(0);
      controller.abort();
      await pending;
      await waitFor(async () => (await decode.metric('vllm:num_requests_waiting')) === 0 && (await decode.metric('vllm:kv_cache_usage_perc')) === 0, 10_000, 'the aborted decode gone');
    } finally {
      silent.close();
    }
  });

  // Before the pull: the replica is gone when the decode replica connects. During it: the replica
  // is frozen (SIGSTOP) so the pull's connection is open and unanswered when SIGKILL ends it.
  it.each([
    ['before the pull', (pid: number) => process.kill(pid, 'SIGKILL')],
    ['during the pull', (pid: number) => (process.kill(pid, 'SIGSTOP'), setTimeout(() => process.kill(pid, 'SIGKILL'), 500))],
  ])('a prefill replica killed (SIGKILL) %s costs a local prefill, not a wrong or hung answer', async (_when, kill) => {
    const doomed = await startServing([...ARGS, '--kv-transfer-config', KV(30)]);
    const killing = await startPdProxy({ prefillUrl: doomed.server.baseUrl, decodeUrl: decode.server.baseUrl, beforeDecode: () => Promise.resolve(void kill(doomed.server.child.pid!)) });
    try {
      const request = { model: prefill.model, prompt: `${STORY} The cat slept.`, max_tokens: 16, temperature: 0 };
      const reference = await prefill.client.completions.create(request);
      const failedBefore = await decode.metric('vllm:nixl_num_failed_transfers_total');
      const viaProxy = new OpenAI({ baseURL: `${killing.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
      const answer = await viaProxy.completions.create(request);
      expect(answer.choices[0].text).toBe(reference.choices[0].text);
      expect(answer.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBeLessThan(reference.usage!.prompt_tokens - 1);
      expect((await decode.metric('vllm:nixl_num_failed_transfers_total')) - failedBefore).toBe(1);
    } finally {
      await killing.close();
      await doomed.server.stop('SIGKILL');
    }
  }, SERVER_START_TIMEOUT_MS);

  it('200 mixed requests (prefills never pulled, aborted decodes) leave no block held on either replica', async () => {
    const words = STORY.split(' ');
    const prompt = (i: number) => `${words.slice(0, 8 + (i % 25)).join(' ')} (${i})`;
    const prefillOnly = { do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null };
    const jobs = Array.from({ length: 200 }, async (_, i) => {
      const body = { model: prefill.model, prompt: prompt(i), max_tokens: 6, temperature: 0 };
      if (i % 4 === 0) return prefill.post('/v1/completions', { ...body, max_tokens: 1, kv_transfer_params: prefillOnly });
      if (i % 4 === 1) {
        // Aborted mid-stream at the decode replica, through the proxy.
        const controller = new AbortController();
        const res = await fetch(`${proxy.baseUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, max_tokens: 64, stream: true }), signal: controller.signal });
        const reader = res.body!.getReader();
        await reader.read();
        controller.abort();
        return null;
      }
      return client.completions.create(body);
    });
    await Promise.all(jobs.map((j) => j.catch(() => null)));
    for (const replica of [prefill, decode]) {
      await waitFor(async () => (await replica.metric('vllm:num_requests_running')) === 0 && (await replica.metric('vllm:num_requests_waiting')) === 0, 20_000, 'no request left');
    }
    // The prefill replica's unpulled offers expire after its abort_request_timeout (2 s).
    await waitFor(async () => (await prefill.metric('vllm:kv_cache_usage_perc')) === 0, 15_000, 'prefill KV usage back to 0');
    expect(await prefill.metric('vllm:nixl_num_kv_expired_reqs_total')).toBeGreaterThanOrEqual(50);
    await waitFor(async () => (await decode.metric('vllm:kv_cache_usage_perc')) === 0, 5_000, 'decode KV usage back to 0');
  }, 60_000);
});
