// One real server started with a typical vLLM deployment's command line (plus dev mode): the flags
// it accepts without effect are announced, and the endpoints vLLM users script against work —
// /invocations, /load, /redoc and the VLLM_SERVER_DEV_MODE endpoints (sleep → 503, wake_up,
// reset_prefix_cache → the next identical prompt misses the cache).

import { defaultTestModel, SERVER_START_TIMEOUT_MS, sseFrames, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';

const onModel = needs(defaultTestModel());
// Long enough for two full 16-token KV blocks.
const PROMPT = 'Once upon a time there was a little girl named Lily. She liked to play in the park with her dog and her friends every day.';

onModel.describe('vLLM command line and endpoints', () => {
  let s: Serving;

  beforeAll(async () => {
    s = await startServing(
      ['--dtype', 'auto', '--trust-remote-code', '--gpu-memory-utilization', '0.9', '--seed', '0', '--disable-log-stats',
        '--enable-sleep-mode', '--enable-server-load-tracking', '--max-model-len', '256', '--max-num-seqs', '8',
        '--default-chat-template-kwargs', '{"greeting": "Howdy"}'],
      { env: { VLLM_SERVER_DEV_MODE: '1' } },
    );
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  const complete = async () => (await s.post('/v1/completions', { prompt: PROMPT, max_tokens: 8, temperature: 0 })).json;

  it('starts from the vLLM line and says which flags have no effect', () => {
    expect(s.server.output()).toMatch(/--trust-remote-code has no effect here: no Python model code is ever run/);
  });

  it('--default-chat-template-kwargs applies under the request\'s own chat_template_kwargs', async () => {
    const tokens = async (kwargs?: Record<string, unknown>) =>
      (await s.post('/tokenize', { messages: [{ role: 'user', content: 'Hi' }], ...(kwargs ? { chat_template_kwargs: kwargs } : {}) })).json.tokens;
    const byDefault = await tokens();
    expect(byDefault).toEqual(await tokens({ greeting: 'Howdy' }));
    expect(byDefault).not.toEqual(await tokens({ greeting: 'Bye' }));
  });

  it('/invocations routes by body shape and answers as the routed endpoint', async () => {
    const direct = await s.post('/v1/completions', { prompt: 'Once upon', max_tokens: 6, temperature: 0 });
    const viaInvocations = await s.post('/invocations', { prompt: 'Once upon', max_tokens: 6, temperature: 0 });
    expect(viaInvocations.status).toBe(200);
    expect(viaInvocations.json.object).toBe('text_completion');
    expect(viaInvocations.json.choices[0].text).toBe(direct.json.choices[0].text);
    const chat = await s.post('/invocations', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, stream: true });
    expect(chat.text.trim().endsWith('data: [DONE]')).toBe(true);
    expect(sseFrames(chat.text)[0].object).toBe('chat.completion.chunk');
    const invalid = await s.post('/invocations', { prompt: 'x', max_tokens: -1 });
    expect(invalid.status).toBe(400);
    const neither = await s.post('/invocations', { input: 'x' });
    expect(neither.status).toBe(400);
    expect(neither.json.error.message).toMatch(/Cannot find suitable handler for request. Expected one of: ChatCompletionRequest, CompletionRequest/);
  });

  it('/load reports the generation requests in flight', async () => {
    const idle = await (await fetch(`${s.server.baseUrl}/load`)).json();
    expect(idle).toEqual({ server_load: 0 });
    const running = s.post('/v1/completions', { prompt: PROMPT, max_tokens: 64, ignore_eos: true });
    let seen = 0;
    for (let i = 0; i < 50 && seen === 0; i++) seen = ((await (await fetch(`${s.server.baseUrl}/load`)).json()) as any).server_load;
    expect(seen).toBe(1);
    await running;
  });

  it('/redoc serves the ReDoc page and its bundle offline', async () => {
    const page = await fetch(`${s.server.baseUrl}/redoc`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<redoc spec-url="/openapi.json">');
    const bundle = await fetch(`${s.server.baseUrl}/redoc/redoc.standalone.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).length).toBeGreaterThan(100_000);
  });

  it('/reset_prefix_cache makes the next identical prompt a cache miss', async () => {
    await complete();
    const before = await s.metric('vllm:prefix_cache_hits_total');
    await complete();
    const afterRepeat = await s.metric('vllm:prefix_cache_hits_total');
    expect(afterRepeat).toBeGreaterThan(before);
    expect(await s.metric('vllm:prompt_tokens_cached_total')).toBeGreaterThan(0);
    expect((await s.post('/reset_prefix_cache', {})).status).toBe(200);
    await complete();
    expect(await s.metric('vllm:prefix_cache_hits_total')).toBe(afterRepeat);
  });

  it('/sleep frees the engine and refuses generation with 503 until /wake_up (levels 1 and 2)', async () => {
    const reference = (await complete()).choices[0].text;
    for (const level of [1, 2]) {
      expect((await s.post(`/sleep?level=${level}`, {})).status).toBe(200);
      expect(await (await fetch(`${s.server.baseUrl}/is_sleeping`)).json()).toEqual({ is_sleeping: true });
      expect(await s.metric('vllm:engine_sleep_state', 'sleep_state="awake"')).toBe(0);
      expect(await s.metric('vllm:engine_sleep_state', level === 1 ? 'sleep_state="weights_offloaded"' : 'sleep_state="discard_all"')).toBe(1);
      const refused = await s.post('/v1/completions', { prompt: PROMPT, max_tokens: 4 });
      expect(refused.status).toBe(503);
      expect(refused.json.error.message).toMatch(/sleeping/);
      expect((await s.post('/wake_up', {})).status).toBe(200);
      expect(await (await fetch(`${s.server.baseUrl}/is_sleeping`)).json()).toEqual({ is_sleeping: false });
      expect((await complete()).choices[0].text).toBe(reference);
    }
  });

  it('/collective_rpc is a 400 with the reason; /server_info hides the API keys', async () => {
    const rpc = await s.post('/collective_rpc', { method: 'echo' });
    expect(rpc.status).toBe(400);
    expect(rpc.json.error.message).toMatch(/no(ne| Python)/);
    const info: any = await (await fetch(`${s.server.baseUrl}/server_info?config_format=json`)).json();
    expect(info.vllm_config).toMatchObject({ seed: 0, gpuMemoryUtilization: 0.9, enableSleepMode: true });
    expect(info.vllm_config.apiKeys).toBeUndefined();
  });
});
