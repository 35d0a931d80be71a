// The tiny Qwen2.5-VL GGUF pair served by ortllm and by llama-server (--mmproj) on the same
// image prompt, one image and two: the same greedy tokens and top logprobs. llama.cpp preprocesses,
// encodes and places the image (M-RoPE positions included) with its own code, so this checks the
// whole image path against an implementation that shares nothing with ours, with two images in one
// prompt too (vision-parity.test.ts runs bench/vision-parity.ts on one image, Gemma 3 included).
// LLaVA is not compared: llama.cpp appends its class token after the patches. Runs only where
// llama-server is built.
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { defaultPeer } from '../../bench/llama-parity';
import { freePort } from '../helpers/free-port';
import { needs } from '../helpers/needs';
import { SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { waitFor } from '../helpers/wait';
import { STORIES } from '../helpers/write-vision-models';
import { dataUrl, greedy, noiseImage, topLogprobs, userWithImages, writeServedVisionModel, type ServedVisionModel } from './vision-serving';

const peer = defaultPeer(resolve(__dirname, '../..'));

interface LlamaStep {
  id: number;
  top_logprobs: Array<{ id: number; logprob: number }>;
}

needs(peer, STORIES).describe('Qwen2.5-VL images: ortllm against llama-server on the same GGUF pair', () => {
  let model: ServedVisionModel;
  let ours: TestServer;
  let client: OpenAI;
  let llama: ChildProcess;
  let llamaUrl: string;
  let marker: string;

  beforeAll(async () => {
    model = await writeServedVisionModel('qwen2_5_vl');
    const port = await freePort();
    llamaUrl = `http://127.0.0.1:${port}`;
    const mmproj = join(model.paths.gguf, '..', 'mmproj-qwen2.5-vl-tiny.gguf');
    llama = spawn(peer, ['-m', model.paths.gguf, '--mmproj', mmproj, '--port', String(port), '-t', '1', '-c', '512', '--no-warmup'], { stdio: 'ignore' });
    ours = await startServer(['--max-model-len', '512'], { model: model.paths.gguf });
    client = new OpenAI({ baseURL: `${ours.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
    await waitFor(async () => (await fetch(`${llamaUrl}/health`).catch(() => null))?.status === 200, 60_000, 'llama-server');
    // The server draws its media marker at random; /props says which.
    marker = ((await (await fetch(`${llamaUrl}/props`)).json()) as { media_marker: string }).media_marker;
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    llama?.kill();
    await ours?.stop();
    model?.remove();
  });

  it.each([1, 2])('%i image(s): same tokens, top logprobs within 1e-3', async (count) => {
    const urls = await Promise.all([5, 6].slice(0, count).map((seed) => dataUrl(noiseImage(...model.imageSize, seed))));
    // llama-server's /completion adds BOS; add_special_tokens asks ortllm's chat for it too.
    const served = await client.chat.completions.create({ ...greedy([userWithImages('Look:', urls)], 6), add_special_tokens: true } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    const ourTokens = (served.choices[0] as unknown as { token_ids: number[] }).token_ids;
    const ourTop = topLogprobs(served.choices[0].logprobs!.content!);
    // mtmd wraps each image in <|vision_start|> ... <|vision_end|> itself: the marker stands for the whole part.
    const prompt = `<|im_start|>user\nLook:${urls.map(() => marker).join('')}<|im_end|>\n<|im_start|>assistant\n`;
    const response = await fetch(`${llamaUrl}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt: { prompt_string: prompt, multimodal_data: urls.map((url) => url.slice(url.indexOf(',') + 1)) },
        n_predict: 6, temperature: 0, n_probs: 5, return_tokens: true, cache_prompt: false,
      }),
    });
    const theirs = (await response.json()) as { tokens: number[]; tokens_evaluated: number; completion_probabilities: LlamaStep[] };
    expect(theirs.tokens).toEqual(ourTokens);
    expect(theirs.tokens_evaluated).toBe(served.usage!.prompt_tokens);
    // llama-server leaves out the steps whose bytes end inside a UTF-8 character: match the rest by order.
    let step = 0;
    for (const entry of theirs.completion_probabilities) {
      while (ourTokens[step] !== entry.id) step++;
      for (const top of entry.top_logprobs) expect({ step, id: top.id, diff: Math.abs(ourTop[step].get(top.id)! - top.logprob) < 1e-3 }).toEqual({ step, id: top.id, diff: true });
      step++;
    }
    expect(theirs.completion_probabilities.length).toBeGreaterThan(0);
  });
});
