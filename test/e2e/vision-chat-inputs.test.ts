// What reaches a vision model over HTTP (the tiny Qwen2.5-VL, M-RoPE, on a real server): JPEG,
// WebP and GIF decode to the pixels sharp gives the test, two images in one message and images in
// two messages land in order, a second turn repeating the first image hits the encoder cache
// (vllm:mm_cache_*) and another image does not, the Responses API's input_image answers as chat
// does (streamed too, and through previous_response_id), no http URL is fetched without
// --allowed-media-domains, a dropped stream aborts, and --mm-processor-cache-gb 0 with 5-token
// prefill chunks serves with no hits. Answers are held against the float64 reference.
import OpenAI from 'openai';
import { needs } from '../helpers/needs';
import { QWEN_VL_CHAT_TEMPLATE } from '../helpers/qwen-vl-files';
import { SERVER_START_TIMEOUT_MS } from '../helpers/server';
import { STORIES } from '../helpers/write-vision-models';
import { anySseFrames, startServing, type Serving } from './completions-helpers';
import {
  answerOf, dataUrl, decodedPixels, expectReferenceAnswer, greedy, noiseImage, userWithImages, writeServedVisionModel,
  type ImageFormat, type RawImage, type ServedVisionModel,
} from './vision-serving';

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** With the model's own chat template (startServing's default one prints no image). */
const startVision = (model: ServedVisionModel, args: string[] = []) => startServing(['--max-model-len', '512', ...args], { model: model.paths.hf }, QWEN_VL_CHAT_TEMPLATE);

needs(STORIES).describe('image inputs to Qwen2.5-VL on a real server', () => {
  let model: ServedVisionModel;
  let s: Serving;
  let images: RawImage[];
  let urls: string[];

  beforeAll(async () => {
    model = await writeServedVisionModel('qwen2_5_vl');
    s = await startVision(model);
    images = [1, 2, 3].map((seed) => noiseImage(...model.imageSize, seed));
    urls = await Promise.all(images.map((image) => dataUrl(image)));
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await s?.server.stop();
    model?.remove();
  });

  const chat = async (messages: Message[]) => answerOf(await s.client.chat.completions.create(greedy(messages)));
  const mmCache = async () => ({ queries: await s.metric('vllm:mm_cache_queries_total'), hits: await s.metric('vllm:mm_cache_hits_total') });

  it.each(['jpeg', 'webp', 'gif'] as ImageFormat[])('decodes %s', async (format) => {
    const url = await dataUrl(images[0], format);
    const pixels = await decodedPixels(url);
    expectReferenceAnswer(model, await chat([userWithImages('Look:', [url])]), [pixels]);
  });

  it('takes two images in one message, in order', async () => {
    const answer = await chat([userWithImages('Compare:', [urls[0], urls[1]])]);
    expectReferenceAnswer(model, answer, [images[0], images[1]]);
    const swapped = await chat([userWithImages('Compare:', [urls[1], urls[0]])]);
    expectReferenceAnswer(model, swapped, [images[1], images[0]]);
  });

  it('takes images in two messages', async () => {
    const answer = await chat([
      userWithImages('First:', [urls[0]]),
      { role: 'assistant', content: 'A picture.' },
      userWithImages('Second:', [urls[2]]),
    ]);
    expectReferenceAnswer(model, answer, [images[0], images[2]]);
  });

  it('hits the encoder cache when a second turn repeats the first image, not with a new image', async () => {
    const image = noiseImage(...model.imageSize, 40);
    const other = noiseImage(...model.imageSize, 41);
    const [url, otherUrl] = await Promise.all([dataUrl(image), dataUrl(other)]);
    const before = await mmCache();
    const first = await s.client.chat.completions.create(greedy([userWithImages('Look:', [url])]));
    const turn: Message[] = [userWithImages('Look:', [url]), { role: 'assistant', content: first.choices[0].message.content }, { role: 'user', content: 'And?' }];
    expectReferenceAnswer(model, await chat(turn), [image]);
    const afterRepeat = await mmCache();
    expect(afterRepeat).toEqual({ queries: before.queries + 2, hits: before.hits + 1 });
    await chat([userWithImages('Look:', [otherUrl])]);
    expect(await mmCache()).toEqual({ queries: afterRepeat.queries + 1, hits: afterRepeat.hits });
  });

  it("answers the Responses API's input_image as chat answers it, streamed too", async () => {
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: [{ type: 'input_text', text: 'Look:' }, { type: 'input_image', image_url: urls[1], detail: 'auto' }] }];
    const viaChat = await s.client.chat.completions.create({ ...greedy([userWithImages('Look:', [urls[1]])], 6), logprobs: false, top_logprobs: undefined });
    const response = await s.client.responses.create({ model: s.model, input, max_output_tokens: 6, temperature: 0 });
    expect(response.output_text).toBe(viaChat.choices[0].message.content);
    expect(response.usage!.input_tokens).toBe(viaChat.usage!.prompt_tokens);
    const streamed = await s.post('/v1/responses', { model: s.model, input, max_output_tokens: 6, temperature: 0, stream: true });
    const frames = anySseFrames(streamed.text);
    // The last frame carries the whole response (response.incomplete here: max_output_tokens ends it).
    const last = frames[frames.length - 1];
    expect(last.response.status).toBe(response.status);
    expect(last.response.output[0].content[0].text).toBe(viaChat.choices[0].message.content);
    expect(frames.filter((f) => f.type === 'response.output_text.delta').map((f) => f.delta).join('')).toBe(viaChat.choices[0].message.content);
  });

  it('carries a stored image into a previous_response_id turn: one more query, one more hit', async () => {
    const image = noiseImage(...model.imageSize, 50);
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: [{ type: 'input_text', text: 'Look:' }, { type: 'input_image', image_url: await dataUrl(image), detail: 'auto' }] }];
    const first = await s.client.responses.create({ model: s.model, input, max_output_tokens: 3, temperature: 0, store: true });
    const before = await mmCache();
    const next = await s.client.responses.create({ model: s.model, previous_response_id: first.id, input: 'And?', max_output_tokens: 3, temperature: 0 });
    expect(next.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    expect(await mmCache()).toEqual({ queries: before.queries + 1, hits: before.hits + 1 });
  });

  it('refuses every http URL when no --allowed-media-domains is given', async () => {
    const refused = await s.post('/v1/chat/completions', { messages: [userWithImages('Look:', ['http://127.0.0.1:9/cat.png'])], max_tokens: 2 });
    expect([refused.status, refused.json.error.message]).toEqual([400, 'The URL must be from one of the allowed domains: []. Input URL domain: 127.0.0.1']);
  });

  it('aborts an image request whose client disconnects mid-stream, and frees it', async () => {
    await s.expectDisconnectAborts('/v1/chat/completions', { messages: [userWithImages('Look:', [urls[2]])], max_tokens: 200, temperature: 0 });
    expect(await s.metric('vllm:kv_cache_usage_perc')).toBe(0);
  });

  describe('with --mm-processor-cache-gb 0 and prefill chunks of 5 tokens', () => {
    let uncached: Serving;
    beforeAll(async () => (uncached = await startVision(model, ['--mm-processor-cache-gb', '0', '--max-num-batched-tokens', '5'])), SERVER_START_TIMEOUT_MS);
    afterAll(() => uncached?.server.stop());

    it('serves repeated images correctly and counts no cache hits', async () => {
      for (let i = 0; i < 2; i++) {
        const answer = answerOf(await uncached.client.chat.completions.create(greedy([userWithImages(`Look ${i}:`, [urls[0]])])));
        expectReferenceAnswer(model, answer, [images[0]]);
      }
      expect(await uncached.metric('vllm:mm_cache_hits_total')).toBe(0);
    });

    it('answers concurrent two-image requests whose chunks cut the images', async () => {
      const pairs = [[0, 1], [1, 2], [2, 0]];
      const answers = await Promise.all(pairs.map(([a, b]) => uncached.client.chat.completions.create(greedy([userWithImages('Both:', [urls[a], urls[b]])])).then(answerOf)));
      answers.forEach((answer, i) => expectReferenceAnswer(model, answer, pairs[i].map((k) => images[k])));
    });
  });
});
