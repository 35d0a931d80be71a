// A vision model's prompts on the serving side: image parts reach the chat template (as
// {"type": "image"} parts, or as vLLM's placeholder lines in the 'string' format), each printed
// placeholder becomes its image's run of image tokens, the placements carry the image hashes, and
// the length checks and usage count the image tokens. Mismatches and bad kwargs are 400s.
import sharp from 'sharp';
import { RequestValidationError } from '../../../../src/engine/errors';
import { InlineTextProcessor } from '../../../../src/engine/text/text-processor';
import type { EngineClient, EngineRequest, RequestOutput } from '../../../../src/engine/types';
import { createChatTemplate } from '../../../../src/model/chat-template';
import type { Tokenizer } from '../../../../src/model/types';
import { ChatServing } from '../../../../src/serving/chat-serving';
import { imageHash } from '../../../../src/serving/media/image-hash';
import { expandImagePlaceholders } from '../../../../src/serving/media/image-prompt';
import { VISION_MODALITIES, type MediaOptions } from '../../../../src/serving/media/media-options';
import type { ServingOptions } from '../../../../src/serving/serving-options';
import { ResponsesServing } from '../../../../src/serving/responses/responses-serving';
import { MemoryResponsesStore } from '../../../../src/serving/responses/store/memory-store';
import { fakeArch } from '../../../helpers/fake-engine';
import { PixelEncoder, seededImage, testVisionModel } from '../../../helpers/pixel-encoder';

/** A character-level tokenizer: id = char code + 10, BOS = 1. */
const chars: Tokenizer = {
  vocabSize: 512,
  bosTokenId: 1,
  eosTokenId: 2,
  padTokenId: null,
  bosToken: '<s>',
  eosToken: '</s>',
  encode: (text, opts) => [...(opts?.addSpecialTokens === false ? [] : [1]), ...[...text].map((c) => c.charCodeAt(0) + 10)],
  decode: (ids) => ids.filter((id) => id >= 10).map((id) => String.fromCharCode(id - 10)).join(''),
  tokenBytes: (id) => new TextEncoder().encode(id >= 10 ? String.fromCharCode(id - 10) : `<${id}>`),
  idToToken: (id) => String(id),
  isSpecial: (id) => id < 10,
};

const PLACEHOLDER = '§';
const PLACEHOLDER_ID = PLACEHOLDER.charCodeAt(0) + 10;
const IMAGE_TOKEN = 9;
const PROMPT_FORMAT = { placeholderText: PLACEHOLDER, placeholderTokenId: PLACEHOLDER_ID, imageTokenId: IMAGE_TOKEN, prefix: [3], suffix: [4, 5] };
const TOKENS_PER_IMAGE = 6;

/** Iterates the content parts: the placeholder for images (as Gemma 3's and Qwen's templates do). */
const OPENAI_TEMPLATE = "{% for m in messages %}{{ m.role }}:{% for p in m.content %}{% if p.type == 'image' %}{{ '§' }}{% else %}{{ p.text }}{% endif %}{% endfor %};{% endfor %}";
/** Iterates the parts but prints nothing for images (a text-only template). */
const SILENT_TEMPLATE = "{% for m in messages %}{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% endif %}{% endfor %}{% endfor %}";
/** Prints the content as one string: the 'string' format. */
const STRING_TEMPLATE = '{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}';

const MEDIA: MediaOptions = {
  modelName: '/models/vision', modalities: VISION_MODALITIES, allowedLocalMediaPath: null, allowedMediaDomains: [], fetchTimeoutMs: 1000,
  allowRedirects: false, maxImageBytes: 2 ** 20, maxImagePixels: 1_000_000, limits: {}, mediaIoKwargs: {}, mmProcessorKwargs: null,
};

const OPTS: ServingOptions = {
  servedModelNames: ['m'], returnTokensAsTokenIds: false, enablePromptTokensDetails: false, enableForceIncludeUsage: false, responseRole: 'assistant',
  trustRequestChatTemplate: false, maxLogprobs: 20, chatTemplateContentFormat: 'auto', enableAutoToolChoice: false, toolCallParser: null,
  excludeToolsWhenToolChoiceNone: false, parsers: { tool: null, reasoning: null }, schedulingPolicy: 'fcfs', media: MEDIA,
};

/** An engine that answers two tokens and keeps the requests; a vision model of TOKENS_PER_IMAGE tokens an image. */
function visionEngine(template: string, maxModelLen = 256) {
  const requests: EngineRequest[] = [];
  const chatTemplate = createChatTemplate(template, {});
  const engine = {
    modelConfig: fakeArch(),
    maxModelLen,
    maxNumSeqs: 8,
    tokenizer: chars,
    chatTemplate,
    text: new InlineTextProcessor(chars, chatTemplate),
    eosTokenIds: [2],
    generationDefaults: {},
    vision: testVisionModel({ encoder: new PixelEncoder(8), tokensPerImage: TOKENS_PER_IMAGE, prompt: PROMPT_FORMAT }),
    ensureCapacity: () => undefined,
    reserve: (sequences: number) => ({ sequences, release: () => undefined }),
    generate(request: EngineRequest): AsyncIterable<RequestOutput> {
      requests.push(request);
      return (async function* () {
        yield {
          requestId: request.requestId, promptTokenIds: request.promptTokenIds, promptLogprobs: null, numCachedTokens: 0, finished: true,
          outputs: [{ index: 0, text: 'ok', tokenIds: [121, 127], cumulativeLogprob: null, logprobs: null, finishReason: 'length', stopReason: null }],
        } satisfies RequestOutput;
      })();
    },
  } as unknown as EngineClient;
  return { engine, requests };
}

const png = async (r: number, g: number, b: number, width = 5, height = 3): Promise<string> =>
  `data:image/png;base64,${(await sharp({ create: { width, height, channels: 3, background: { r, g, b } } }).png().toBuffer()).toString('base64')}`;

const imagePart = (url: string) => ({ type: 'image_url', image_url: { url } });

async function refusal(promise: Promise<unknown>): Promise<RequestValidationError> {
  const err = await promise.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(RequestValidationError);
  return err as RequestValidationError;
}

describe('expandImagePlaceholders', () => {
  const vision = { prompt: PROMPT_FORMAT };
  const processor = testVisionModel({ encoder: new PixelEncoder(8), tokensPerImage: 2, prompt: PROMPT_FORMAT }).processor;

  it('replaces each placeholder with prefix, image tokens and suffix, and says where each run starts', () => {
    const sizes = [{ width: 4, height: 4 }, { width: 9, height: 2 }];
    const { tokenIds, runs } = expandImagePlaceholders([1, 50, PLACEHOLDER_ID, 51, PLACEHOLDER_ID], sizes, vision, processor);
    expect(tokenIds).toEqual([1, 50, 3, 9, 9, 4, 5, 51, 3, 9, 9, 4, 5]);
    expect(runs).toEqual([{ offset: 3, length: 2 }, { offset: 9, length: 2 }]);
  });

  it("refuses a count of placeholders other than the images' with vLLM's message", () => {
    const expand = (ids: number[], images: number) => () => expandImagePlaceholders(ids, new Array(images).fill({ width: 2, height: 2 }), vision, processor);
    expect(expand([1, 50], 1)).toThrow(/Expected there to be 1 prompt updates corresponding to 1 image items, but instead found 0 prompt updates!/);
    expect(expand([PLACEHOLDER_ID, PLACEHOLDER_ID], 1)).toThrow(/instead found 2 prompt updates/);
  });
});

describe('imageHash', () => {
  it('is the same for the same pixels, size and kwargs (in any key order), and differs otherwise', async () => {
    const a = seededImage(4, 3, 1);
    const same = { ...a, rgb: Uint8Array.from(a.rgb) };
    const h = await imageHash(a, { x: 1, y: { b: 2, a: 1 } });
    expect(await imageHash(same, { y: { a: 1, b: 2 }, x: 1 })).toBe(h);
    expect(await imageHash(a, { x: 2, y: { a: 1, b: 2 } })).not.toBe(h);
    expect(await imageHash({ ...a, width: 3, height: 4 }, { x: 1, y: { b: 2, a: 1 } })).not.toBe(h);
    const flipped = Uint8Array.from(a.rgb);
    flipped[5] ^= 1;
    expect(await imageHash({ ...a, rgb: flipped }, { x: 1, y: { b: 2, a: 1 } })).not.toBe(h);
  });
});

describe('chat with a vision model', () => {
  it('expands each image in the prompt, places it with its hash and counts its tokens in usage', async () => {
    const { engine, requests } = visionEngine(OPENAI_TEMPLATE);
    const serving = new ChatServing(engine, OPTS);
    const red = await png(200, 10, 10);
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'ab' }, imagePart(red), { type: 'text', text: 'c' }, imagePart(await png(10, 10, 200)), imagePart(red)] }];
    const prep = await serving.prepare({ messages, max_tokens: 2 }, 'req');
    const response = await serving.complete(prep);
    const [request] = requests;
    const text = (s: string) => [...s].map((c) => c.charCodeAt(0) + 10);
    const run = [3, ...new Array<number>(TOKENS_PER_IMAGE).fill(IMAGE_TOKEN), 4, 5];
    expect(request.promptTokenIds).toEqual([...text('user:ab'), ...run, ...text('c'), ...run, ...run, ...text(';')]);
    const placements = request.multiModal!.placements!;
    expect(placements.map(({ offset, length }) => [offset, length])).toEqual([[8, 6], [18, 6], [27, 6]]);
    expect(placements[0].hash).toBe(placements[2].hash);
    expect(placements[1].hash).not.toBe(placements[0].hash);
    expect(request.multiModal!.images.map((i) => [i.width, i.height])).toEqual([[5, 3], [5, 3], [5, 3]]);
    expect(response.usage).toMatchObject({ prompt_tokens: request.promptTokenIds.length, completion_tokens: 2 });
  });

  it("writes vLLM's placeholder line for each image when the template takes content as a string", async () => {
    const { engine, requests } = visionEngine(STRING_TEMPLATE);
    const serving = new ChatServing(engine, OPTS);
    await serving.complete(await serving.prepare({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, imagePart(await png(1, 2, 3))] }], max_tokens: 1 }, 'r'));
    const prompt = chars.decode(requests[0].promptTokenIds.filter((id) => id !== IMAGE_TOKEN && id > 5));
    expect(prompt).toBe('user:\nhi;');
    expect(requests[0].multiModal!.placements).toHaveLength(1);
  });

  it('refuses a prompt whose template printed no placeholder for an image (vLLM: found 0 prompt updates)', async () => {
    const { engine } = visionEngine(SILENT_TEMPLATE);
    const serving = new ChatServing(engine, OPTS);
    const err = await refusal(serving.prepare({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, imagePart(await png(1, 2, 3))] }] }, 'r'));
    expect(err.message).toMatch(/Expected there to be 1 prompt updates corresponding to 1 image items, but instead found 0 prompt updates/);
  });

  it('refuses a prompt that the image tokens make longer than max_model_len, counting them as vLLM does', async () => {
    const { engine } = visionEngine(OPENAI_TEMPLATE, 20);
    const serving = new ChatServing(engine, OPTS);
    const url = await png(1, 2, 3);
    const err = await refusal(serving.prepare({ messages: [{ role: 'user', content: [imagePart(url), imagePart(url)] }] }, 'r'));
    // 'user:' + 2 x (1 + 6 + 2) + ';' = 24 tokens.
    expect(err.message).toMatch(/24/);
  });

  it('refuses mm_processor_kwargs the processor does not take', async () => {
    const { engine } = visionEngine(OPENAI_TEMPLATE);
    const serving = new ChatServing(engine, OPTS);
    const err = await refusal(serving.prepare({ messages: [{ role: 'user', content: [imagePart(await png(1, 2, 3))] }], mm_processor_kwargs: { bogus: 1 } }, 'r'));
    expect(err.param).toBe('mm_processor_kwargs');
    expect(err.message).toMatch(/bogus/);
  });
});

describe('the Responses API with a vision model', () => {
  const responses = (engine: EngineClient) =>
    new ResponsesServing(engine, OPTS, new MemoryResponsesStore({ maxBytes: 2 ** 20, ttlSeconds: 0 }), { maxDepth: 10, maxBytes: 2 ** 20 });

  it('places input_image parts and counts their tokens in usage', async () => {
    const { engine, requests } = visionEngine(OPENAI_TEMPLATE);
    const serving = responses(engine);
    const input = [{ type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text: 'ab' }, { type: 'input_image' as const, image_url: await png(9, 9, 9) }] }];
    const response = await serving.complete(await serving.prepare({ input, max_output_tokens: 2, store: false }, 'r'));
    const [request] = requests;
    expect(request.multiModal!.placements!.map(({ offset, length }) => [offset, length])).toEqual([[8, TOKENS_PER_IMAGE]]);
    expect(request.promptTokenIds.slice(8, 8 + TOKENS_PER_IMAGE)).toEqual(new Array<number>(TOKENS_PER_IMAGE).fill(IMAGE_TOKEN));
    expect(response.usage).toMatchObject({ input_tokens: request.promptTokenIds.length });
  });

  it("names 'input' when the template printed no placeholder", async () => {
    const { engine } = visionEngine(SILENT_TEMPLATE);
    const input = [{ type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text: 'ab' }, { type: 'input_image' as const, image_url: await png(9, 9, 9) }] }];
    const err = await refusal(responses(engine).prepare({ input, store: false }, 'r'));
    expect(err.param).toBe('input');
    expect(err.message).toMatch(/found 0 prompt updates/);
  });
});
