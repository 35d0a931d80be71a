// The tiny Gemma 3 and LLaVA GGUF pairs (test/helpers/write-vision-models.ts) load in a real
// llama-server with --mmproj and answer a chat request carrying an image at the tower's native
// size: the mmproj files are what llama.cpp reads. Runs only where llama-server is built.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { defaultPeer } from '../../bench/llama-parity';
import { freePort } from '../helpers/free-port';
import { needs } from '../helpers/needs';
import { waitFor } from '../helpers/wait';
import { STORIES, writeVisionGguf, writeVisionHfDir, type VisionFamilyName } from '../helpers/write-vision-models';
import { randomImage } from '../unit/model/vision/random-image';

const peer = defaultPeer(resolve(__dirname, '../..'));

async function pngDataUrl(side: number): Promise<string> {
  const image = randomImage(side, side, 4);
  const png = await sharp(Buffer.from(image.data), { raw: { width: side, height: side, channels: 3 } }).png().toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}

async function healthy(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`)).status === 200;
  } catch {
    return false;
  }
}

needs(peer, STORIES).describe('llama-server --mmproj on the written GGUF pairs', () => {
  let tmp: string;
  let server: ChildProcess | null = null;
  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-mmproj-'))));
  afterEach(() => server?.kill());
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  // F16: the converters' storage, which leaves the position embedding F32 (Gemma 3's graph adds it
  // to the patches as stored, and ggml's CPU add takes no F16 operand there).
  it.each<[VisionFamilyName, number, 'f32' | 'f16']>([
    ['gemma3', 224, 'f32'],
    ['llava', 56, 'f32'],
    ['gemma3', 224, 'f16'],
    ['llava', 56, 'f16'],
    // LLaVA-1.6's mmproj (pinpoints, model.image_newline); llama.cpp slices a 112 px image into its overview and tiles.
    ['llava_next', 112, 'f32'],
  ])('%s: loads and answers a chat request with a %i px image (%s mmproj)', async (family, side, matrixType) => {
    const hfDir = join(tmp, `${family}-${matrixType}-hf`);
    const written = await writeVisionHfDir(family, hfDir);
    const model = await writeVisionGguf(family, hfDir, join(tmp, `${family}-${matrixType}-gguf`), written, { matrixType });
    const port = await freePort();
    let log = '';
    server = spawn(peer, ['-m', model, '--mmproj', join(model, '..', 'mmproj-model.gguf'), '--port', String(port), '-t', '1', '-c', '512', '--no-warmup'], { stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    await waitFor(() => healthy(port), 60_000, `llama-server on ${family}`).catch((err: Error) => {
      throw new Error(`${err.message}\n${log.slice(-3000)}`);
    });
    const chat = async (content: unknown[]) => {
      const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 4, temperature: 0 }),
      });
      expect({ status: response.status, log: response.status === 200 ? '' : log.slice(-3000) }).toEqual({ status: 200, log: '' });
      return ((await response.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    };
    const text = { type: 'text', text: 'what is it' };
    const withImage = await chat([{ type: 'image_url', image_url: { url: await pngDataUrl(side) } }, text]);
    // The tower's 16 rows (and llama.cpp's wrapping tokens) are in the prompt.
    expect(withImage - (await chat([text]))).toBeGreaterThanOrEqual(16);
  }, 120_000);
});
