// The tiny Gemma 3 and LLaVA-1.5 vision-language models (test/helpers/write-vision-models.ts), as
// HF directories and as GGUF pairs, start a real server with their vision side loaded and answer
// a text chat request; a bad --mm-processor-kwargs stops the start-up, naming the key.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs } from '../helpers/needs';
import { runCli, startServer, type TestServer } from '../helpers/server';
import { STORIES, writeVisionGguf, writeVisionHfDir, type VisionFamilyName } from '../helpers/write-vision-models';

needs(STORIES).describe('serving vision-language models', () => {
  let tmp: string;
  const models = new Map<string, string>();
  let server: TestServer | null = null;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-vlm-serve-'));
    for (const family of ['gemma3', 'llava'] as VisionFamilyName[]) {
      const dir = join(tmp, `${family}-hf`);
      const written = await writeVisionHfDir(family, dir);
      models.set(`${family} hf`, dir);
      models.set(`${family} gguf`, await writeVisionGguf(family, dir, join(tmp, `${family}-gguf`), written));
    }
  });
  afterEach(async () => {
    await server?.stop();
    server = null;
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it.each(['gemma3 hf', 'gemma3 gguf', 'llava hf', 'llava gguf'])('%s: starts and answers a text chat request', async (name) => {
    server = await startServer(['--max-model-len', '256'], { model: models.get(name)! });
    const response = await fetch(`${server.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hello there' }], max_tokens: 3, temperature: 0 }),
    });
    const body = (await response.json()) as { usage?: { completion_tokens: number } };
    expect({ status: response.status, body: response.status === 200 ? null : body }).toEqual({ status: 200, body: null });
    expect(body.usage!.completion_tokens).toBe(3);
  }, 120_000);

  it('refuses a --mm-processor-kwargs key the processor does not take, at start-up', async () => {
    const run = await runCli(['serve', models.get('gemma3 hf')!, '--port', '0', '--mm-processor-kwargs', '{"crop_size": 3}']);
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toContain('mm_processor_kwargs: unsupported setting crop_size=3');
  }, 120_000);
});
