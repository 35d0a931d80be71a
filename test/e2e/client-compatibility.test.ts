// What code written against the official `openai` client meets on real servers (stories260K and a
// random MiniLM): a background response streamed without leaking abort listeners, Matryoshka
// `dimensions` enabled by --hf-overrides, and 404s that say which API the served model lacks or
// which model names it serves. Transcriptions' typed events are checked in audio.test.ts.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { writeEncoderDir } from '../helpers/encoder-model';
import { HealthProbe } from '../helpers/health-probe';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';

const stories = defaultTestModel();
const HEALTH_LIMIT_MS = 200;

/** The status and message of the error `call` rejects with. */
async function apiError(call: Promise<unknown>): Promise<{ status: number | undefined; message: string }> {
  const err = (await call.then(() => null, (e: unknown) => e)) as InstanceType<typeof OpenAI.APIError> | null;
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return { status: err!.status, message: (err!.error as { message: string }).message };
}

function clientOf(server: TestServer): OpenAI {
  return new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
}

needs(stories).describe('typed clients against real servers', () => {
  let tmp: string;
  let text: TestServer;
  let embed: TestServer;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-clients-'));
    const encoder = writeEncoderDir(join(tmp, 'minilm'), { family: 'bert', numLabels: null, hidden: 32, layers: 1, heads: 4, intermediate: 64, maxPositions: 64 }, 7, { pooling: 'mean', normalize: true });
    [text, embed] = await Promise.all([
      startServer(['--chat-template', '{% for m in messages %}{{ m.content }} {% endfor %}']),
      startServer(['--served-model-name', 'minilm', '--hf-overrides', '{"is_matryoshka": true}'], { model: encoder.dir }),
    ]);
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all([text?.stop(), embed?.stop()]);
    rmSync(tmp, { recursive: true, force: true });
  });

  it('streams a background response without piling abort listeners on the connection', async () => {
    const client = clientOf(text);
    const probe = new HealthProbe(text.baseUrl);
    const follow = async () => {
      const stream = await client.responses.create({ model: stories, input: 'Once upon a time', background: true, stream: true, max_output_tokens: 48, temperature: 0, ignore_eos: true } as never);
      const types: string[] = [];
      for await (const event of stream as unknown as AsyncIterable<{ type: string }>) types.push(event.type);
      return types;
    };
    const { result: types, report } = await probe.during(follow());
    probe.close();
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(11);
    expect(types[types.length - 1]).toBe('response.incomplete'); // max_output_tokens reached
    expect(report.max).toBeLessThan(HEALTH_LIMIT_MS);
    expect(text.output()).not.toMatch(/MaxListenersExceededWarning|EventTarget memory leak/);
    const next = await client.completions.create({ model: stories, prompt: 'Once', max_tokens: 2 });
    expect(next.choices[0].text.length).toBeGreaterThan(0);
  });

  it('names the served model in the 404 for an unknown one; the model name defaults to MODEL as given', async () => {
    const client = clientOf(text);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual([stories]);
    const refused = await apiError(client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] }));
    expect(refused).toEqual({ status: 404, message: `The model \`gpt-4o\` does not exist. Served model names: \`${stories}\`.` });
  });

  it("answers an API the model lacks with vLLM's message, and other unknown paths with Not Found", async () => {
    const lacks = (server: TestServer, call: (c: OpenAI) => Promise<unknown>) => apiError(call(clientOf(server)));
    const chat = (c: OpenAI) => c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
    expect(await lacks(embed, chat)).toEqual({ status: 404, message: 'The model does not support Chat Completions API' });
    expect(await lacks(embed, (c) => c.completions.create({ model: 'm', prompt: 'x' }))).toEqual({ status: 404, message: 'The model does not support Completions API' });
    expect(await lacks(embed, (c) => c.responses.create({ model: 'm', input: 'x' }))).toEqual({ status: 404, message: 'The model does not support Responses API' });
    expect(await lacks(text, (c) => c.embeddings.create({ model: 'm', input: 'x' }))).toEqual({ status: 404, message: 'The model does not support Embeddings API' });
    const upload = async (c: OpenAI) => c.audio.transcriptions.create({ model: 'm', file: await toFile(Buffer.from('no route reads this'), 'a.wav') });
    expect(await lacks(text, upload)).toEqual({ status: 404, message: 'The model does not support Transcriptions API' });
    const raw = await fetch(`${embed.baseUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(await raw.json()).toEqual({ error: { message: 'The model does not support Chat Completions API', type: 'NotFoundError', param: null, code: 404 } });
    const other = await fetch(`${embed.baseUrl}/v1/nothing-here`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([other.status, ((await other.json()) as { error: { message: string } }).error.message]).toEqual([404, expect.not.stringContaining('does not support')]);
    expect((await clientOf(embed).embeddings.create({ model: 'minilm', input: 'still fine' })).data).toHaveLength(1);
  });

  it("truncates to `dimensions` and re-normalises on a model --hf-overrides declares Matryoshka", async () => {
    const client = clientOf(embed);
    const input = 'The quick brown fox';
    const [full] = (await client.embeddings.create({ model: 'minilm', input })).data;
    const [short] = (await client.embeddings.create({ model: 'minilm', input, dimensions: 8 })).data;
    expect(full.embedding).toHaveLength(32);
    expect(short.embedding).toHaveLength(8);
    const head = full.embedding.slice(0, 8);
    const norm = Math.hypot(...head);
    short.embedding.forEach((x, i) => expect(x).toBeCloseTo(head[i] / norm, 5));
    const tooMany = await apiError(client.embeddings.create({ model: 'minilm', input, dimensions: 33 }));
    expect(tooMany.status).toBe(400);
  });
});
