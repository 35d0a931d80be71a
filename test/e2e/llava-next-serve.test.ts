// The tiny LLaVA-NeXT (test/helpers/write-vision-models.ts), as a Hugging Face directory and as a
// GGUF text model with LLaVA-1.6's mmproj, served over HTTP: a chat request with
// a non-square image is expanded to the image's anyres token count, and the greedy answer is the
// float64 reference decoder's fed the float64 reference tower's rows at those positions.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { loadModel } from '../../src/model/load-model';
import { imagePlaceholderTokens, preprocessImage } from '../../src/model/vision/preprocess-image';
import { loadOptions } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { referenceForward } from '../helpers/reference-forward';
import { referenceLlavaNextForward } from '../helpers/reference-vision';
import { startServer, type TestServer } from '../helpers/server';
import { STORIES, writeVisionGguf, writeVisionHfDir } from '../helpers/write-vision-models';
import { randomImage } from '../unit/model/vision/random-image';

const IMAGE_TOKEN = 512;

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

needs(STORIES).describe('serving LLaVA-NeXT', () => {
  let tmp: string;
  let server: TestServer | null = null;

  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-llava-next-serve-'))));
  afterEach(async () => {
    await server?.stop();
    server = null;
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it.each(['hf', 'gguf'])('%s: answers a chat request with a wide image as the float64 reference does', async (format) => {
    const hfDir = join(tmp, `${format}-hf`);
    const written = await writeVisionHfDir('llava_next', hfDir);
    const dir = format === 'hf' ? hfDir : await writeVisionGguf('llava_next', hfDir, join(tmp, 'gguf'), written);
    const image = randomImage(150, 70, 11);
    const png = await sharp(Buffer.from(image.data), { raw: { width: image.width, height: image.height, channels: 3 } }).png().toBuffer();
    server = await startServer(['--max-model-len', '512'], { model: dir });
    const response = await fetch(`${server.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }, { type: 'text', text: 'what is it' }] }],
        max_tokens: 3, temperature: 0, ignore_eos: true, return_token_ids: true,
      }),
    });
    const body = (await response.json()) as { prompt_token_ids: number[]; choices: Array<{ token_ids: number[] }>; usage: { prompt_tokens: number } };
    expect({ status: response.status, body: response.status === 200 ? null : body }).toEqual({ status: 200, body: null });

    const model = await loadModel(loadOptions(dir));
    const tokens = imagePlaceholderTokens(model.vision!.processor, image.width, image.height);
    const prompt = body.prompt_token_ids;
    const start = prompt.indexOf(IMAGE_TOKEN);
    expect(prompt.filter((t) => t === IMAGE_TOKEN).length).toBe(tokens);
    expect(prompt.slice(start, start + tokens).every((t) => t === IMAGE_TOKEN)).toBe(true);
    expect(body.usage.prompt_tokens).toBe(prompt.length);

    const pixels = preprocessImage(model.vision!.processor, image).pixelValues;
    const rows = referenceLlavaNextForward(written.json, written.vision, pixels, image);
    const inputRows = new Map(rows.map((row, i) => [start + i, row] as const));
    const greedy = (given?: Map<number, Float64Array>) => {
      const generated: number[] = [];
      for (let step = 0; step < 3; step++) {
        const logits = referenceForward(model.config, model.weights!, [...prompt, ...generated], undefined, given);
        generated.push(argmax(logits[logits.length - 1]));
      }
      return generated;
    };
    // The image's rows decide the answer: without them (the <image> token's embedding) it differs.
    expect(greedy()).not.toEqual(greedy(inputRows));
    expect(body.choices[0].token_ids).toEqual(greedy(inputRows));
  }, 180_000);
});
