// Multi-LoRA serving end to end: the real server (`--enable-lora`, `--lora-modules`,
// VLLM_ALLOW_RUNTIME_LORA_UPDATING) on stories260K with seeded PEFT adapters (ranks 8 and 16, all
// seven modules, alpha ≠ rank), driven by the official `openai` client: adapters listed by
// /v1/models, chat and completions naming an adapter run it (greedy text differs from the base
// model's), load → serve → unload → 404, and a broken adapter is a 400 while the server keeps serving.
// It needs every LoRA part (adapter files, backends, engine): on a branch without them the engine
// refuses loadLora and the server does not start.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { loadModel } from '../../src/model/load-model';
import { LORA_MODULES } from '../../src/model/lora/lora-weights';
import { writeRandomPeftAdapter } from '../../src/model/lora/write-adapter';
import type { DecoderArchConfig } from '../../src/model/types';
import { loadOptions } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { defaultTestModel, REPO_ROOT, runCli, SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';

const STORIES = defaultTestModel();
const KEY = 'lora-key';
const PROMPT = 'Once upon a time';
/** stories260K has no chat template of its own. */
const CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}";

needs(STORIES).describe('LoRA adapters on a real server', () => {
  let server: TestServer;
  let client: OpenAI;
  let dir: string;
  let staticPath: string;
  let dynamicPath: string;

  /** POST to the adapter routes (plain-text success bodies, so not through the client). */
  const adapterRoute = async (route: 'load_lora_adapter' | 'unload_lora_adapter', body: object) => {
    const res = await fetch(`${server.baseUrl}/v1/${route}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  };
  const greedy = async (model: string) => (await client.completions.create({ model, prompt: PROMPT, max_tokens: 12, temperature: 0 })).choices[0].text;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ortllm-lora-e2e-'));
    const config = (await loadModel(loadOptions(STORIES, { loadWeights: false }))).config as DecoderArchConfig;
    staticPath = join(dir, 'static');
    dynamicPath = join(dir, 'dynamic');
    writeRandomPeftAdapter(staticPath, config, { rank: 8, alpha: 19, seed: 7, modules: LORA_MODULES });
    writeRandomPeftAdapter(dynamicPath, config, { rank: 16, alpha: 35, seed: 8, modules: LORA_MODULES });
    // vLLM's filesystem resolver: a PEFT adapter for this base model in the cache directory's `resolved/`.
    const resolvedPath = join(dir, 'cache', 'resolved');
    writeRandomPeftAdapter(resolvedPath, config, { rank: 8, alpha: 11, seed: 9, modules: LORA_MODULES });
    const adapterConfig = join(resolvedPath, 'adapter_config.json');
    writeFileSync(adapterConfig, JSON.stringify({ ...JSON.parse(readFileSync(adapterConfig, 'utf8')), base_model_name_or_path: STORIES }));
    const template = join(dir, 'chat.jinja');
    writeFileSync(template, CHAT_TEMPLATE);
    server = await startServer(['--api-key', KEY, '--served-model-name', 'stories', '--chat-template', template, '--enable-lora', '--max-loras', '2', '--lora-modules', `static=${staticPath}`], {
      env: { VLLM_ALLOW_RUNTIME_LORA_UPDATING: '1', VLLM_LORA_RESOLVER_CACHE_DIR: join(dir, 'cache') },
    });
    client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: KEY, maxRetries: 0, timeout: 60_000 });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('/v1/models lists the --lora-modules adapter after the base model (root: its path, parent: the base)', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => [m.id, (m as unknown as { root: string }).root, (m as unknown as { parent: string | null }).parent])).toEqual([
      ['stories', STORIES, null],
      ['static', staticPath, 'stories'],
    ]);
  });

  it('chat and completions naming the static adapter run it: its greedy text is not the base model\'s', async () => {
    const base = await greedy('stories');
    const adapted = await greedy('static');
    expect(adapted).not.toBe(base);
    const chat = await client.chat.completions.create({ model: 'static', messages: [{ role: 'user', content: PROMPT }], max_tokens: 4, temperature: 0 });
    expect(chat.model).toBe('static');
  });

  it('load → serve → unload → 404 through the runtime routes', async () => {
    expect(await adapterRoute('load_lora_adapter', { lora_name: 'dynamic', lora_path: dynamicPath })).toEqual({ status: 200, text: "Success: LoRA adapter 'dynamic' added successfully." });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['stories', 'static', 'dynamic']);
    const completion = await client.completions.create({ model: 'dynamic', prompt: PROMPT, max_tokens: 12, temperature: 0 });
    expect(completion.model).toBe('dynamic');
    expect(completion.choices[0].text).not.toBe(await greedy('stories'));
    expect(await adapterRoute('unload_lora_adapter', { lora_name: 'dynamic' })).toEqual({ status: 200, text: "Success: LoRA adapter 'dynamic' removed successfully." });
    const gone = client.chat.completions.create({ model: 'dynamic', messages: [{ role: 'user', content: PROMPT }], max_tokens: 2 });
    await expect(gone).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(gone).rejects.toMatchObject({ status: 404, message: expect.stringContaining('The model `dynamic` does not exist.') });
  });

  it('a name found by the filesystem resolver is loaded on first use and then listed', async () => {
    const chat = await client.chat.completions.create({ model: 'resolved', messages: [{ role: 'user', content: PROMPT }], max_tokens: 4, temperature: 0 });
    expect(chat.model).toBe('resolved');
    expect((await client.models.list()).data.map((m) => m.id)).toContain('resolved');
    await expect(client.completions.create({ model: 'unresolved', prompt: PROMPT, max_tokens: 2 })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('a broken adapter is a 400 with the loader\'s message, a missing path a 404, and the server keeps serving', async () => {
    const broken = join(dir, 'broken');
    mkdirSync(broken);
    writeFileSync(join(broken, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 8, lora_alpha: 16, target_modules: ['q_proj'], use_dora: true }));
    const refused = await adapterRoute('load_lora_adapter', { lora_name: 'broken', lora_path: broken });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text).error.type).toBe('BadRequestError');
    const missing = await adapterRoute('load_lora_adapter', { lora_name: 'missing', lora_path: join(dir, 'nowhere') });
    expect([missing.status, JSON.parse(missing.text).error.message]).toEqual([404, `Loading lora missing failed: No adapter found for ${join(dir, 'nowhere')}`]);
    expect((await client.models.list()).data.map((m) => m.id)).not.toContain('broken');
    expect((await greedy('static')).length).toBeGreaterThan(0);
  });

  it('a --lora-modules adapter that cannot load fails the start with the loader\'s message', () => {
    const run = spawnSync('node', [join(REPO_ROOT, 'dist/src/main.js'), 'serve', STORIES, '--port', '0', '--enable-lora', '--lora-modules', `bad=${join(dir, 'nowhere')}`], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`ortllm: failed: Loading lora bad failed: No adapter found for ${join(dir, 'nowhere')}`);
  });

  it('run-batch serves lines naming the --lora-modules adapter as the server does', async () => {
    const line = (id: string, model: string) => JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/completions', body: { model, prompt: PROMPT, max_tokens: 12, temperature: 0 } });
    writeFileSync(join(dir, 'in.jsonl'), [line('adapter', 'static'), line('base', 'stories'), line('unknown', 'nope')].join('\n'));
    const run = await runCli(['run-batch', '-i', join(dir, 'in.jsonl'), '-o', join(dir, 'out.jsonl'), '--model', STORIES, '--served-model-name', 'stories', '--enable-lora', '--lora-modules', `static=${staticPath}`]);
    expect(run.code).toBe(0);
    const [adapter, base, unknown] = readFileSync(join(dir, 'out.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect([adapter.response.body.model, adapter.response.body.choices[0].text]).toEqual(['static', await greedy('static')]);
    expect(base.response.body.choices[0].text).toBe(await greedy('stories'));
    expect(unknown.response.status_code).toBe(404);
  });
});
