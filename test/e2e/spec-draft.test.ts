// A draft model on a real server: stories260K served with its Q4_0 copy drafting
// (--speculative-config method draft_model), next to one without speculation, through the
// official `openai` client: greedy completions and chats (streamed or not, with stop strings) are
// the same text, sampling with n > 1 runs, and the start-up log says what the draft loaded.

import OpenAI from 'openai';
import { sharedModel } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';

const STORIES = defaultTestModel();
const DRAFT = sharedModel('stories260K-Q4_0.gguf');
const TEMPLATE = '{% for m in messages %}{{ m.content }} {% endfor %}';
const PROMPTS = ['Once upon a time', 'Lily saw a big dog in the park and', 'The little boy wanted to', 'One day, Tom and his mom went'];

needs(STORIES, DRAFT).describe('draft-model speculation on a real server', () => {
  let plain: TestServer;
  let spec: TestServer;
  const client = (server: TestServer) => new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60_000 });

  beforeAll(async () => {
    [plain, spec] = await Promise.all([
      startServer(['--served-model-name', 'stories', '--chat-template', TEMPLATE]),
      startServer(['--served-model-name', 'stories', '--chat-template', TEMPLATE, '--speculative-config', JSON.stringify({ method: 'draft_model', model: DRAFT, num_speculative_tokens: 4 })]),
    ]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await plain?.stop();
    await spec?.stop();
  });

  it('logs the draft model and its KV cache at start-up', () => {
    expect(spec.output()).toMatch(/\[engine\] draft model \S*stories260K-Q4_0\.gguf: llama, 5 layers, hidden size 64; its KV cache: \d+ blocks of 16 tokens/);
    expect(spec.output()).toContain('[engine] speculative decoding: draft model');
  });

  it('gives the same greedy completions, batched, streamed and with a stop string', async () => {
    const complete = (server: TestServer) =>
      Promise.all(PROMPTS.map(async (prompt) => (await client(server).completions.create({ model: 'stories', prompt, max_tokens: 60, temperature: 0 })).choices[0].text));
    expect(await complete(spec)).toEqual(await complete(plain));
    const streamed = async (server: TestServer) => {
      const stream = await client(server).completions.create({ model: 'stories', prompt: PROMPTS[0], max_tokens: 60, temperature: 0, stop: ['park'], stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      return text;
    };
    expect(await streamed(spec)).toBe(await streamed(plain));
  });

  it('gives the same greedy chat answers', async () => {
    const chat = (server: TestServer) =>
      Promise.all(PROMPTS.map(async (content) => (await client(server).chat.completions.create({ model: 'stories', messages: [{ role: 'user', content }], max_tokens: 50, temperature: 0 })).choices[0].message.content));
    expect(await chat(spec)).toEqual(await chat(plain));
  });

  it('samples n > 1 completions at temperature > 0', async () => {
    const out = await client(spec).completions.create({ model: 'stories', prompt: PROMPTS[1], max_tokens: 30, temperature: 0.8, n: 3, seed: 5 });
    expect(out.choices).toHaveLength(3);
    for (const c of out.choices) expect(c.finish_reason).toBe('length');
    expect(out.usage?.completion_tokens).toBe(90);
  });
});
