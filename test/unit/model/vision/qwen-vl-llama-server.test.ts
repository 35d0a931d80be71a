// The seeded GGUF pair (text + mmproj) as llama.cpp reads it: llama-server --mmproj loads both
// and answers an image chat, and the image-token count it uses for an image it must resize
// equals ours for the mmproj's processor (llama.cpp's float32 smart_resize, 8..4096 tokens).
// Only where bench/build-llama-server.sh has built llama-server.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { defaultPeer } from '../../../../bench/llama-parity';
import { imagePlaceholderTokens } from '../../../../src/model/vision/preprocess-image';
import { imageProcessorConfigFromGguf } from '../../../../src/model/vision/processor-config-gguf';
import { readGgufFile } from '../../../../src/model/gguf/gguf-file';
import { freePort } from '../../../helpers/free-port';
import { needs } from '../../../helpers/needs';
import { writeQwenVlGguf } from '../../../helpers/qwen-vl-files';
import { waitFor } from '../../../helpers/wait';
import { STORIES } from '../../../helpers/write-decoder-files';

const peer = defaultPeer(resolve(__dirname, '../../../..'));

async function pngDataUrl(width: number, height: number): Promise<string> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 37) % 256;
  const png = await sharp(pixels, { raw: { width, height, channels: 3 } }).png().toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

needs(peer, STORIES).describe('the GGUF pair in llama-server --mmproj', () => {
  let dir: string;
  let server: ChildProcess;
  let port: number;
  let mmproj: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ortllm-qwenvl-llama-'));
    const paths = await writeQwenVlGguf(dir, 31);
    mmproj = paths.mmproj;
    port = await freePort();
    server = spawn(peer, ['-m', paths.text, '--mmproj', paths.mmproj, '--port', String(port), '-t', '1', '-c', '2048', '--no-warmup'], { stdio: 'ignore' });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok === true, 60_000, 'llama-server health');
  }, 90_000);
  afterAll(() => {
    server?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  async function promptTokens(width: number, height: number): Promise<number> {
    const body = {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: await pngDataUrl(width, height) } }, { type: 'text', text: 'hi' }] }],
      max_tokens: 2,
      temperature: 0,
    };
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { usage: { prompt_tokens: number }; choices: unknown[] };
    expect(json.choices).toHaveLength(1);
    return json.usage.prompt_tokens;
  }

  it("answers image chats with as many image tokens as our mmproj processor counts", async () => {
    const processor = imageProcessorConfigFromGguf((await readGgufFile(mmproj)).metadata, mmproj);
    // 150 x 90 resizes (not multiples of 28); 56 x 56 is below llama.cpp's 8-token minimum.
    const sizes: Array<[number, number]> = [[150, 90], [56, 56], [224, 112]];
    const counts = await Promise.all(sizes.map(([w, h]) => promptTokens(w, h)));
    const ours = sizes.map(([w, h]) => imagePlaceholderTokens(processor, w, h));
    // The text around the image is the same in every request: the differences are the images'.
    expect(counts.map((c) => c - counts[0])).toEqual(ours.map((n) => n - ours[0]));
  }, 60_000);
});
