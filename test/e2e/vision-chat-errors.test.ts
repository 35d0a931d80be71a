// Bad image requests to a vision model on a real server (the tiny LLaVA-1.5) are OpenAI-style 400s
// that hurt nothing: too many images, bytes of no image format, a truncated PNG, a PNG whose header
// declares a decompression bomb, an http URL from a domain not allowed (and a 404 as 422),
// file:// outside --allowed-local-media-path (directly and through a symlink), a bad
// mm_processor_kwargs, a chat template that prints no image, image tokens past --max-model-len.
// While they fail, good image requests running beside them get the reference's answers; six
// different images at once get the answers each gets alone.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { needs } from '../helpers/needs';
import { SERVER_START_TIMEOUT_MS } from '../helpers/server';
import { IMAGE_PARTS_TEMPLATE, STORIES } from '../helpers/write-vision-models';
import { expectApiError, startServing, type Serving } from './completions-helpers';
import { answerOf, dataUrl, expectReferenceAnswer, greedy, noiseImage, userWithImages, writeServedVisionModel, type ServedVisionModel } from './vision-serving';

/** Prints the text parts only: the image has no placeholder. */
const TEXT_ONLY_TEMPLATE =
  "{% for m in messages %}{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}\n{% endfor %}assistant:";

/** A PNG of `png`'s pixels whose IHDR claims `width` x `height` (its CRC fixed, so only the size is wrong). */
function withDeclaredSize(png: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(png);
  // Signature (8), IHDR length (4), "IHDR" (4), then width and height; the CRC covers type + data (17 bytes).
  out.writeUInt32BE(width, 16);
  out.writeUInt32BE(height, 20);
  out.writeUInt32BE(crc32(out.subarray(12, 29)), 29);
  return out;
}

needs(STORIES).describe('bad image requests to a vision model', () => {
  let model: ServedVisionModel;
  let s: Serving;
  let media: string;
  let outside: string;
  let imageHost: Server;
  let imagesUrl: string;
  let root: string;

  beforeAll(async () => {
    model = await writeServedVisionModel('llava');
    root = mkdtempSync(join(tmpdir(), 'ortllm-vision-errors-'));
    media = join(root, 'media');
    mkdirSync(media);
    outside = join(root, 'outside.png');
    const png = Buffer.from((await dataUrl(noiseImage(...model.imageSize, 7))).split(',')[1], 'base64');
    writeFileSync(join(media, 'inside.png'), png);
    writeFileSync(outside, png);
    symlinkSync(outside, join(media, 'link.png'));
    // An image host on 127.0.0.1: /cat.png is the image, anything else a 404.
    imageHost = createServer((req, res) => {
      if (req.url === '/cat.png') res.writeHead(200, { 'content-type': 'image/png' }).end(png);
      else res.writeHead(404).end();
    });
    await new Promise<void>((done) => imageHost.listen(0, '127.0.0.1', done));
    imagesUrl = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}`;
    s = await startServing(
      [
        '--max-model-len', '256', '--limit-mm-per-prompt', '{"image": 1}', '--allowed-local-media-path', media, '--allowed-media-domains', '127.0.0.1',
        '--trust-request-chat-template',
      ],
      { model: model.paths.hf },
      IMAGE_PARTS_TEMPLATE('<image>'),
    );
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await s?.server.stop();
    imageHost?.close();
    model?.remove();
    rmSync(root, { recursive: true, force: true });
  });

  const imageRequest = (url: string, extra: Record<string, unknown> = {}) => ({ messages: [userWithImages('Look:', [url])], max_tokens: 2, ...extra });

  /** The bad request's 400 (message matched), with good image requests sent beside it answered as the reference says. */
  async function expectRefusedBesideGood(body: Record<string, unknown>, message: RegExp, param = 'messages'): Promise<void> {
    const images = [noiseImage(...model.imageSize, 21), noiseImage(...model.imageSize, 22)];
    const urls = await Promise.all(images.map((image) => dataUrl(image)));
    const good = urls.map((url) => s.client.chat.completions.create(greedy([userWithImages('Look:', [url])])));
    const bad = await s.post('/v1/chat/completions', body);
    expect({ status: bad.status, type: bad.json?.error?.type, param: bad.json?.error?.param ?? null }).toEqual({ status: 400, type: 'BadRequestError', param });
    expect(bad.json.error.message).toMatch(message);
    const answers = await Promise.all(good);
    answers.forEach((answer, i) => expectReferenceAnswer(model, answerOf(answer), [images[i]]));
  }

  it('refuses more images than --limit-mm-per-prompt', async () => {
    const url = await dataUrl(noiseImage(...model.imageSize, 1));
    await expectRefusedBesideGood({ messages: [userWithImages('Two:', [url, url])] }, /^At most 1 image\(s\) may be provided in one prompt\./, 'image');
  });

  it('refuses bytes of no image format', async () => {
    await expectRefusedBesideGood(imageRequest(`data:image/png;base64,${Buffer.from('not an image at all').toString('base64')}`), /^cannot identify image file/);
  });

  it('refuses a truncated PNG', async () => {
    const png = Buffer.from((await dataUrl(noiseImage(...model.imageSize, 3))).split(',')[1], 'base64');
    await expectRefusedBesideGood(imageRequest(`data:image/png;base64,${png.subarray(0, png.length - 40).toString('base64')}`), /^image file is truncated or corrupt/);
  });

  it('refuses a PNG whose header declares more pixels than allowed, before decoding', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123456' } }).png().toBuffer();
    const bomb = withDeclaredSize(png, 50_000, 50_000);
    await expectRefusedBesideGood(imageRequest(`data:image/png;base64,${bomb.toString('base64')}`), /^Image size \(2500000000 pixels\) exceeds limit of 89478485 pixels, could be decompression bomb/);
  });

  it('fetches an image from an allowed domain, refuses other domains, answers a 404 with 422', async () => {
    const fetched = await s.client.chat.completions.create(greedy([userWithImages('Look:', [`${imagesUrl}/cat.png`])]));
    expectReferenceAnswer(model, answerOf(fetched), [noiseImage(...model.imageSize, 7)]);
    const other = imagesUrl.replace('127.0.0.1', 'localhost');
    await expectRefusedBesideGood(imageRequest(`${other}/cat.png`), /^The URL must be from one of the allowed domains: \['127\.0\.0\.1'\]\. Input URL domain: localhost$/);
    const missing = await s.post('/v1/chat/completions', imageRequest(`${imagesUrl}/none.png`));
    expect([missing.status, missing.json.error.message]).toEqual([422, expect.stringMatching(/^Failed to fetch media from URL: /)]);
  });

  it('serves a file inside --allowed-local-media-path and refuses one outside it, also through a symlink', async () => {
    const inside = await s.client.chat.completions.create(greedy([userWithImages('Look:', [`file://${join(media, 'inside.png')}`])]));
    expectReferenceAnswer(model, answerOf(inside), [noiseImage(...model.imageSize, 7)]);
    await expectRefusedBesideGood(imageRequest(`file://${outside}`), /must be a subpath of/);
    await expectRefusedBesideGood(imageRequest(`file://${join(media, 'link.png')}`), /must be a subpath of/);
  });

  it('refuses mm_processor_kwargs the processor does not take', async () => {
    const url = await dataUrl(noiseImage(...model.imageSize, 4));
    await expectRefusedBesideGood(imageRequest(url, { mm_processor_kwargs: { crop_size: 3 } }), /crop_size/, 'mm_processor_kwargs');
  });

  it('refuses a template that leaves no placeholder for the image', async () => {
    const url = await dataUrl(noiseImage(...model.imageSize, 5));
    await expectRefusedBesideGood(imageRequest(url, { chat_template: TEXT_ONLY_TEMPLATE }), /Expected there to be 1 prompt updates corresponding to 1 image items, but instead found 0 prompt updates/);
  });

  it('counts the image tokens against --max-model-len', async () => {
    const url = await dataUrl(noiseImage(...model.imageSize, 6));
    const ok = await s.client.chat.completions.create(greedy([userWithImages('Look:', [url])], 1));
    const prompt = ok.usage!.prompt_tokens;
    const tooLong = 256 - prompt + 1;
    await expectRefusedBesideGood(
      imageRequest(url, { max_tokens: tooLong }),
      new RegExp(`^'max_tokens' or 'max_completion_tokens' is too large: ${tooLong}\\. This model's maximum context length is 256 tokens and your request has ${prompt} input tokens`),
      'max_tokens',
    );
  });

  it('answers six different images at once as it answers each alone', async () => {
    const urls = await Promise.all([30, 31, 32, 33, 34, 35].map((seed) => dataUrl(noiseImage(...model.imageSize, seed))));
    const ask = (url: string) => s.client.chat.completions.create(greedy([userWithImages('Look:', [url])], 6)).then(answerOf);
    const together = await Promise.all(urls.map(ask));
    const alone = [];
    for (const url of urls) alone.push(await ask(url));
    expect(together).toEqual(alone);
    alone.forEach((answer, i) => expectReferenceAnswer(model, answer, [noiseImage(...model.imageSize, 30 + i)]));
    expect(new Set(alone.map((a) => JSON.stringify(a.tokenIds))).size).toBeGreaterThan(1);
  });

  it('stays healthy', async () => {
    expect((await fetch(`${s.server.baseUrl}/health`)).status).toBe(200);
    await expectApiError(s.client.chat.completions.create({ model: s.model, messages: [userWithImages('x', ['data:image/png;base64,AAAA'])], max_tokens: 1 }), 400, 'messages');
    expect((await fetch(`${s.server.baseUrl}/health`)).status).toBe(200);
  });
});
