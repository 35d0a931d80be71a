// LoRA adapters on the real app factory (Fastify, in-process) with a scripted engine that records
// loadLora/unloadLora: --lora-modules loaded at start-up, /v1/models' adapter cards, the
// load/unload endpoints (registration by VLLM_ALLOW_RUNTIME_LORA_UPDATING, vLLM's bodies and
// statuses, the API key), and `model` naming an adapter on completions, chat and tokens-in/out.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../../../src/app-factory';
import { resolveServerConfig, type ServerConfig } from '../../../../src/config/server-config';
import { createChatTemplate } from '../../../../src/model/chat-template';
import { createBuiltinTokenizer } from '../../../../src/model/tokenizer';
import { FakeEngine } from '../../../helpers/fake-engine';

const tokenizer = createBuiltinTokenizer();
const TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}";
const ADAPTERS = mkdtempSync(join(tmpdir(), 'ortllm-lora-routes-'));
/** An adapter directory that exists (the fake engine "loads" anything that does). */
function adapterDir(name: string): string {
  const dir = join(ADAPTERS, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

interface Built {
  app: NestFastifyApplication;
  fastify: FastifyInstance;
  engine: FakeEngine;
}

const opened: NestFastifyApplication[] = [];
afterEach(async () => {
  for (const app of opened.splice(0)) await app.close();
});

async function build(flags: Partial<ServerConfig>, env: NodeJS.ProcessEnv = {}, engine = new FakeEngine({ tokenizer, chatTemplate: createChatTemplate(TEMPLATE, {}), script: [...Buffer.from('Once')] })): Promise<Built> {
  const config = resolveServerConfig({ model: '/models/tiny.gguf', servedModelNames: ['tiny'], disableUvicornAccessLog: true, logLevel: 'error', ...flags }, env);
  const app = await createApp(config, { engine });
  opened.push(app);
  await app.init();
  const fastify = app.getHttpAdapter().getInstance();
  await fastify.ready();
  return { app, fastify, engine };
}

const RUNTIME = { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'true' };

async function post(fastify: FastifyInstance, url: string, payload: object, headers: Record<string, string> = {}) {
  const res = await fastify.inject({ method: 'POST', url, payload, headers });
  return { status: res.statusCode, body: res.body, type: res.headers['content-type'], json: () => JSON.parse(res.body) };
}

async function models(fastify: FastifyInstance): Promise<Array<Record<string, unknown>>> {
  return (await fastify.inject({ method: 'GET', url: '/v1/models' })).json().data;
}

describe('--lora-modules', () => {
  it('loads each adapter at start-up with ids from 1 and lists it in /v1/models (root: its path, parent: its base model)', async () => {
    const sql = adapterDir('sql');
    const chat = adapterDir('chat');
    const { fastify, engine } = await build({
      enableLora: true,
      servedModelNames: ['tiny', 'tiny-alias'],
      loraModules: [{ name: 'sql', path: sql }, { name: 'chat', path: chat, baseModelName: 'tiny-alias' }],
    });
    expect(engine.loraCalls).toEqual([{ load: { name: 'sql', id: 1, path: sql } }, { load: { name: 'chat', id: 2, path: chat } }]);
    const cards = await models(fastify);
    expect(cards.map((c) => [c.id, c.root, c.parent, c.max_model_len, c.owned_by])).toEqual([
      ['tiny', '/models/tiny.gguf', null, 256, 'vllm'],
      ['tiny-alias', '/models/tiny.gguf', null, 256, 'vllm'],
      ['sql', sql, 'tiny', null, 'vllm'],
      ['chat', chat, 'tiny-alias', null, 'vllm'],
    ]);
  });

  it('a module the engine refuses fails the start with the loader\'s message', async () => {
    const bad = adapterDir('bad');
    const engine = new FakeEngine({ refuseLora: () => 'adapter rank 32 is above --max-lora-rank 16' });
    await expect(build({ enableLora: true, loraModules: [{ name: 'bad', path: bad }] }, {}, engine)).rejects.toThrow('adapter rank 32 is above --max-lora-rank 16');
  });

  it("a module whose path does not exist fails the start with vLLM's not-found message", async () => {
    await expect(build({ enableLora: true, loraModules: [{ name: 'gone', path: '/nowhere/gone' }] })).rejects.toThrow('Loading lora gone failed: No adapter found for /nowhere/gone');
  });
});

describe('model naming an adapter', () => {
  it('runs the adapter on completions, chat, /inference/v1/generate and /v1/responses, reporting its name; base names run the base model', async () => {
    const sql = adapterDir('sql');
    const { fastify, engine } = await build({ enableLora: true, enableScaleOut: true, loraModules: [{ name: 'sql', path: sql }] });
    const lora = { name: 'sql', id: 1, path: sql };
    const completion = await post(fastify, '/v1/completions', { model: 'sql', prompt: 'Hi', max_tokens: 2 });
    expect(completion.status).toBe(200);
    expect(completion.json().model).toBe('sql');
    const chat = await post(fastify, '/v1/chat/completions', { model: 'sql', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
    expect(chat.status).toBe(200);
    expect(chat.json().model).toBe('sql');
    const generate = await post(fastify, '/inference/v1/generate', { model: 'sql', token_ids: [1, 2, 3], sampling_params: { max_tokens: 2 } });
    expect(generate.status).toBe(200);
    const response = await post(fastify, '/v1/responses', { model: 'sql', input: 'Hi', max_output_tokens: 2 });
    expect([response.status, response.json().model]).toEqual([200, 'sql']);
    const base = await post(fastify, '/v1/completions', { model: 'tiny', prompt: 'Hi', max_tokens: 2 });
    expect(base.json().model).toBe('tiny');
    const noModel = await post(fastify, '/v1/completions', { prompt: 'Hi', max_tokens: 2 });
    expect(noModel.json().model).toBe('tiny');
    expect(engine.requests.map((r) => r.lora ?? null)).toEqual([lora, lora, lora, lora, null, null]);
  });

  it("an unknown name is vLLM's 404, naming the served models and adapters", async () => {
    const { fastify } = await build({ enableLora: true, loraModules: [{ name: 'sql', path: adapterDir('sql') }] });
    const res = await post(fastify, '/v1/completions', { model: 'nope', prompt: 'Hi', max_tokens: 2 });
    expect(res.status).toBe(404);
    expect(res.json().error).toMatchObject({ type: 'NotFoundError', param: 'model', message: 'The model `nope` does not exist. Served model names: `tiny`, `sql`.' });
  });

  it('tokenize accepts an adapter name (same tokenizer)', async () => {
    const { fastify } = await build({ enableLora: true, loraModules: [{ name: 'sql', path: adapterDir('sql') }] });
    expect((await post(fastify, '/tokenize', { model: 'sql', prompt: 'Hi' })).status).toBe(200);
  });
});

describe('POST /v1/load_lora_adapter and /v1/unload_lora_adapter', () => {
  it('are not registered without VLLM_ALLOW_RUNTIME_LORA_UPDATING', async () => {
    const { fastify } = await build({ enableLora: true });
    expect((await post(fastify, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: adapterDir('a') })).status).toBe(404);
    expect((await post(fastify, '/v1/unload_lora_adapter', { lora_name: 'a' })).status).toBe(404);
  });

  it("load → serve → in-place reload → unload → 404, with vLLM's plain-text bodies and ids never reused", async () => {
    const a = adapterDir('a');
    const { fastify, engine } = await build({ enableLora: true }, RUNTIME);
    const loaded = await post(fastify, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: a });
    expect([loaded.status, loaded.body]).toEqual([200, "Success: LoRA adapter 'a' added successfully."]);
    expect(loaded.type).toMatch(/^text\/plain/);
    expect((await models(fastify)).map((c) => c.id)).toEqual(['tiny', 'a']);
    expect((await post(fastify, '/v1/completions', { model: 'a', prompt: 'Hi', max_tokens: 1 })).status).toBe(200);

    const again = await post(fastify, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: a });
    expect(again.status).toBe(400);
    expect(again.json().error).toMatchObject({
      type: 'InvalidUserInput',
      message: "The lora adapter 'a' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.",
    });
    expect((await post(fastify, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: a, load_inplace: true })).status).toBe(200);
    expect((await post(fastify, '/v1/completions', { model: 'a', prompt: 'Hi', max_tokens: 1 })).status).toBe(200);

    const unloaded = await post(fastify, '/v1/unload_lora_adapter', { lora_name: 'a' });
    expect([unloaded.status, unloaded.body]).toEqual([200, "Success: LoRA adapter 'a' removed successfully."]);
    const gone = await post(fastify, '/v1/completions', { model: 'a', prompt: 'Hi', max_tokens: 1 });
    expect([gone.status, gone.json().error.message]).toEqual([404, 'The model `a` does not exist. Served model names: `tiny`.']);
    expect((await models(fastify)).map((c) => c.id)).toEqual(['tiny']);
    const twice = await post(fastify, '/v1/unload_lora_adapter', { lora_name: 'a' });
    expect([twice.status, twice.json().error.message]).toEqual([404, "The lora adapter 'a' cannot be found."]);

    expect((await post(fastify, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: a })).status).toBe(200);
    expect(engine.loraCalls).toEqual([
      { load: { name: 'a', id: 1, path: a } },
      { load: { name: 'a', id: 2, path: a } },
      { unload: 1 },
      { unload: 2 },
      { load: { name: 'a', id: 3, path: a } },
    ]);
    expect(engine.requests.map((r) => r.lora?.id)).toEqual([1, 2]);
  });

  it('refuses what vLLM refuses, with its statuses and messages, and keeps serving', async () => {
    const refusals: Record<string, string> = {
      broken: 'adapter_config.json: target module fc1 is not a linear of this model',
      empty: 'No adapter found for /adapters/empty (no adapter_config.json)',
    };
    const engine = new FakeEngine({ tokenizer, script: [...Buffer.from('Once')], refuseLora: (r) => refusals[r.name] ?? null });
    const { fastify } = await build({ enableLora: true }, RUNTIME, engine);
    const cases: Array<[object, number, string]> = [
      [{ lora_name: '', lora_path: adapterDir('x') }, 400, "Both 'lora_name' and 'lora_path' must be provided."],
      [{ lora_name: 'x', lora_path: '/nowhere/x' }, 404, 'Loading lora x failed: No adapter found for /nowhere/x'],
      [{ lora_name: 'broken', lora_path: adapterDir('broken') }, 400, 'adapter_config.json: target module fc1 is not a linear of this model'],
      [{ lora_name: 'empty', lora_path: adapterDir('empty') }, 404, `Loading lora empty failed: No adapter found for ${adapterDir('empty')}`],
      [{ lora_name: 'tiny', lora_path: adapterDir('tiny') }, 400, "The lora adapter name 'tiny' is a served model name (--served-model-name); choose another."],
    ];
    for (const [body, status, message] of cases) {
      const res = await post(fastify, '/v1/load_lora_adapter', body);
      expect([res.status, res.json().error.message]).toEqual([status, message]);
    }
    expect((await post(fastify, '/v1/load_lora_adapter', { lora_name: 'x' })).status).toBe(400);
    const noName = await post(fastify, '/v1/unload_lora_adapter', { lora_name: '' });
    expect([noName.status, noName.json().error.message]).toEqual([400, "'lora_name' needs to be provided to unload a LoRA adapter."]);
    expect((await models(fastify)).map((c) => c.id)).toEqual(['tiny']);
    expect((await post(fastify, '/v1/completions', { prompt: 'Hi', max_tokens: 1 })).status).toBe(200);
  });

  it('unload checks lora_int_id when it is given', async () => {
    const { fastify } = await build({ enableLora: true }, RUNTIME);
    await post(fastify, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: adapterDir('a') });
    expect((await post(fastify, '/v1/unload_lora_adapter', { lora_name: 'a', lora_int_id: 7 })).status).toBe(404);
    expect((await post(fastify, '/v1/unload_lora_adapter', { lora_name: 'a', lora_int_id: 1 })).status).toBe(200);
  });

  it('without --enable-lora a load is refused with the message vLLM gives', async () => {
    const { fastify } = await build({}, RUNTIME);
    const res = await post(fastify, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: adapterDir('a') });
    expect([res.status, res.json().error.message]).toEqual([400, 'LoRA is not enabled. Use --enable-lora to enable LoRA.']);
  });

  it('need the API key like every /v1 route', async () => {
    const { fastify } = await build({ enableLora: true, apiKeys: ['k'] }, RUNTIME);
    const body = { lora_name: 'a', lora_path: adapterDir('a') };
    expect((await post(fastify, '/v1/load_lora_adapter', body)).status).toBe(401);
    expect((await post(fastify, '/v1/load_lora_adapter', body, { authorization: 'Bearer k' })).status).toBe(200);
    expect((await post(fastify, '/v1/unload_lora_adapter', { lora_name: 'a' })).status).toBe(401);
  });
});

describe('the filesystem LoRA resolver (VLLM_LORA_RESOLVER_CACHE_DIR)', () => {
  const cache = join(ADAPTERS, 'resolver-cache');
  /** An adapter directory in the cache whose adapter_config.json names `base`. */
  const cached = (name: string, base = '/models/tiny.gguf'): string => {
    const dir = join(cache, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', base_model_name_or_path: base, r: 8, lora_alpha: 16, target_modules: ['q_proj'] }));
    return dir;
  };
  const env = { ...RUNTIME, VLLM_LORA_RESOLVER_CACHE_DIR: cache };

  it('loads an unknown name found in the cache on first use, then serves it like any adapter', async () => {
    const path = cached('found');
    const { fastify, engine } = await build({ enableLora: true, enableScaleOut: true }, env);
    const first = await post(fastify, '/v1/completions', { model: 'found', prompt: 'Hi', max_tokens: 1 });
    expect([first.status, first.json().model]).toEqual([200, 'found']);
    expect((await post(fastify, '/inference/v1/generate', { model: 'found', token_ids: [1, 2], sampling_params: { max_tokens: 1 } })).status).toBe(200);
    expect(engine.loraCalls).toEqual([{ load: { name: 'found', id: 1, path } }]);
    expect(engine.requests.map((r) => r.lora?.id)).toEqual([1, 1]);
    expect((await models(fastify)).map((c) => [c.id, c.root])).toEqual([['tiny', '/models/tiny.gguf'], ['found', path]]);
  });

  it("answers vLLM's 400 when the adapter is found but does not load, and the 404 when it is not found", async () => {
    cached('unloadable');
    cached('foreign', '/models/other.gguf');
    const engine = new FakeEngine({ tokenizer, script: [...Buffer.from('Once')], refuseLora: () => 'LoRA rank 64 is greater than max_lora_rank 16.' });
    const { fastify } = await build({ enableLora: true }, env, engine);
    const refused = await post(fastify, '/v1/completions', { model: 'unloadable', prompt: 'Hi', max_tokens: 1 });
    expect([refused.status, refused.json().error.message]).toEqual([400, "LoRA adapter 'unloadable' was found but could not be loaded."]);
    for (const name of ['foreign', 'absent', '../lora-routes']) {
      expect((await post(fastify, '/v1/completions', { model: name, prompt: 'Hi', max_tokens: 1 })).status).toBe(404);
    }
  });

  it('is not consulted without VLLM_ALLOW_RUNTIME_LORA_UPDATING, or when VLLM_PLUGINS leaves it out', async () => {
    cached('found');
    for (const flags of [{ VLLM_LORA_RESOLVER_CACHE_DIR: cache }, { ...env, VLLM_PLUGINS: 'some_python_plugin' }]) {
      const { fastify, engine } = await build({ enableLora: true }, flags);
      expect((await post(fastify, '/v1/completions', { model: 'found', prompt: 'Hi', max_tokens: 1 })).status).toBe(404);
      expect(engine.loraCalls).toEqual([]);
    }
  });

  it("a cache directory that does not exist fails the start with vLLM's message", () => {
    expect(() => resolveServerConfig({ enableLora: true }, { ...RUNTIME, VLLM_LORA_RESOLVER_CACHE_DIR: join(ADAPTERS, 'none') })).toThrow(
      'VLLM_LORA_RESOLVER_CACHE_DIR must be set to a valid directory for Filesystem Resolver plugin to function',
    );
  });
});

