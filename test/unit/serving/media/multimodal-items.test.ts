// One prompt's images: --limit-mm-per-prompt parsed as vLLM's MultiModalConfig, the item count
// checked as validate_num_items, a text-only model refused before anything is fetched, and the
// images of a vision model decoded in prompt order behind `{"type": "image"}` placeholder parts.

import sharp from 'sharp';
import { mergeMediaIoKwargs, parseLimitMmPerPrompt, parseMediaIoKwargs, type MmLimits } from '../../../../src/config/multimodal-config';
import { RequestValidationError } from '../../../../src/engine/errors';
import { prepareChatMessagesTakingTurns } from '../../../../src/serving/chat-messages';
import { checkItemCount, MultiModalItems } from '../../../../src/serving/media/multimodal-items';
import { mediaOptionsFrom, TEXT_ONLY, type MediaOptions, type ModelModalities } from '../../../../src/serving/media/media-options';

function options(modalities: ModelModalities, limitMmPerPrompt: MmLimits = {}): MediaOptions {
  return mediaOptionsFrom(
    {
      model: '/models/tiny.gguf', allowedLocalMediaPath: null, allowedMediaDomains: [], imageFetchTimeoutSeconds: 5, mediaUrlAllowRedirects: true,
      maxImageFilesizeMb: 1, maxImagePixels: 1_000_000, limitMmPerPrompt, mediaIoKwargs: {}, mmProcessorKwargs: { max_pixels: 100 },
    },
    modalities,
  );
}

const dataUrl = async (rgb: [number, number, number], width: number): Promise<string> => {
  const png = await sharp({ create: { width, height: 1, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).png().toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
};

describe('--limit-mm-per-prompt', () => {
  it('takes counts and per-modality options, 999 for what it does not name', () => {
    expect(parseLimitMmPerPrompt('{"image": 2, "video": {"count": 1, "num_frames": 8}}')).toEqual({
      image: { count: 2, options: {} },
      video: { count: 1, options: { num_frames: 8 } },
    });
    expect(parseLimitMmPerPrompt('{"image": {"width": 512}}').image).toEqual({ count: 999, options: { width: 512 } });
  });

  it('refuses what vLLM refuses', () => {
    expect(() => parseLimitMmPerPrompt('[1]')).toThrow(/JSON object keyed by modality/);
    expect(() => parseLimitMmPerPrompt('{"image": -1}')).toThrow(/count must be an integer >= 0/);
    expect(() => parseLimitMmPerPrompt('{"image": {"num_frames": 2}}')).toThrow(/unknown option 'num_frames'/);
    expect(() => parseLimitMmPerPrompt('{"audio": {"length": 0}}')).toThrow(/length must be an integer >= 1/);
    expect(() => parseLimitMmPerPrompt('{image: 1}')).toThrow(/must be JSON/);
  });

  it("counts items against the model's limit and the user's, with vLLM's messages", () => {
    const user = parseLimitMmPerPrompt('{"image": 2}');
    expect(() => checkItemCount('image', 2, { image: null }, user)).not.toThrow();
    // The hint only where the model itself takes more (a model without a limit takes the user's).
    expect(() => checkItemCount('image', 3, { image: 5 }, user)).toThrow(
      new RequestValidationError('At most 2 image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit.', 'image'),
    );
    expect(() => checkItemCount('image', 3, { image: null }, user)).toThrow(/^At most 2 image\(s\) may be provided in one prompt\.$/);
    expect(() => checkItemCount('image', 2, { image: 1 }, user)).toThrow(/^At most 1 image\(s\) may be provided in one prompt\.$/);
    expect(() => checkItemCount('video', 1, { image: null }, user)).toThrow(/^At most 0 video\(s\)/);
    expect(() => checkItemCount('image', 999, { image: null }, {})).not.toThrow();
  });
});

describe('--media-io-kwargs', () => {
  it('is an object of objects, and the request goes over it modality by modality', () => {
    const server = parseMediaIoKwargs('{"image": {"rgba_background_color": [0, 0, 0], "x": 1}}');
    expect(mergeMediaIoKwargs(server, { image: { x: 2 } })).toEqual({ image: { rgba_background_color: [0, 0, 0], x: 2 } });
    expect(() => parseMediaIoKwargs('{"image": 3}')).toThrow(/\["image"\] must be an object/);
  });
});

describe('MultiModalItems', () => {
  it('refuses an image for a text-only model before fetching it', async () => {
    const items = new MultiModalItems(options(TEXT_ONLY), {});
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: 'http://unreachable.invalid/a.png' } }] }];
    await expect(prepareChatMessagesTakingTurns(messages, 'messages', items)).rejects.toThrow(
      new RequestValidationError('/models/tiny.gguf is not a multimodal model'),
    );
  });

  it('checks the shape of the part before the model, as the request model does', async () => {
    const items = new MultiModalItems(options(TEXT_ONLY), {});
    const bad = [{ role: 'user', content: [{ type: 'image_url', image_url: { detail: 'low' } }] }];
    await expect(prepareChatMessagesTakingTurns(bad, 'messages', items)).rejects.toThrow(/needs 'image_url'/);
  });

  it('keeps refusing audio, and images where no tracker is given', async () => {
    const audio = [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: '', format: 'wav' } }] }];
    await expect(prepareChatMessagesTakingTurns(audio, 'messages', new MultiModalItems(options({ image: null }), {}))).rejects.toThrow(/not supported/);
    const image = [{ role: 'user', content: [{ type: 'image_url', image_url: 'data:,' }] }];
    await expect(prepareChatMessagesTakingTurns(image)).rejects.toThrow(/not supported by this server yet/);
  });

  it("leaves placeholder parts and decodes a vision model's images in order", async () => {
    const items = new MultiModalItems(options({ image: null }), { mm_processor_kwargs: { fps: 2 }, media_io_kwargs: { image: { rgba_background_color: [1, 2, 3] } } });
    const red = await dataUrl([255, 0, 0], 3);
    const green = await dataUrl([0, 255, 0], 5);
    const messages = [
      { role: 'user', content: [{ type: 'image_url', image_url: { url: red, detail: 'high' } }, { type: 'text', text: 'and' }, { type: 'input_image', image_url: green }] },
    ];
    const checked = await prepareChatMessagesTakingTurns(messages, 'messages', items);
    expect(checked[0].content).toEqual([{ type: 'image' }, { type: 'text', text: 'and' }, { type: 'image' }]);
    const input = await items.resolve();
    expect(input!.images.map((i) => [i.width, i.height, [...i.rgb.subarray(0, 3)]])).toEqual([[3, 1, [255, 0, 0]], [5, 1, [0, 255, 0]]]);
    expect(input!.processorKwargs).toEqual({ max_pixels: 100, fps: 2 });
  });

  it('enforces --limit-mm-per-prompt while reading the messages', async () => {
    const items = new MultiModalItems(options({ image: null }, parseLimitMmPerPrompt('{"image": 1}')), {});
    const part = { type: 'image_url', image_url: 'data:image/png;base64,AAAA' };
    await expect(prepareChatMessagesTakingTurns([{ role: 'user', content: [part, part] }], 'messages', items)).rejects.toThrow(/^At most 1 image\(s\)/);
  });

  it('refuses malformed request fields and background colours', async () => {
    expect(() => new MultiModalItems(options({ image: null }), { media_io_kwargs: [] })).toThrow(/media_io_kwargs must be an object/);
    expect(() => new MultiModalItems(options({ image: null }), { mm_processor_kwargs: 'x' })).toThrow(/mm_processor_kwargs must be an object/);
    const items = new MultiModalItems(options({ image: null }), { media_io_kwargs: { image: { rgba_background_color: [0, 0, 256] } } });
    items.addImage(await dataUrl([0, 0, 0], 1), 'messages');
    await expect(items.resolve()).rejects.toThrow('rgba_background_color must be a list or tuple of 3 integers in the range [0, 255].');
  });

  it('turns an undecodable image into a 400 naming the field', async () => {
    const items = new MultiModalItems(options({ image: null }), {});
    items.addImage(`data:image/png;base64,${Buffer.from('nope').toString('base64')}`, 'messages');
    const err = await items.resolve().catch((e: RequestValidationError) => e);
    expect(err).toBeInstanceOf(RequestValidationError);
    expect([(err as RequestValidationError).param, (err as Error).message]).toEqual(['messages', expect.stringMatching(/^cannot identify image file/)]);
  });
});
