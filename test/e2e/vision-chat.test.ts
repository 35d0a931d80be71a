// Images over HTTP on a real server (engine in its worker thread) with the official `openai`
// client: each tiny vision-language model, from its Hugging Face directory and from its GGUF +
// mmproj pair, answers a PNG image + text with the float64 reference's greedy tokens and
// logprobs (tower reference rows on the image tokens), counts the image tokens in
// usage.prompt_tokens, answers the same image alike and another image otherwise, and streams
// the same answer.
import OpenAI from 'openai';
import { needs } from '../helpers/needs';
import { SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { STORIES } from '../helpers/write-vision-models';
import {
  answerOf, dataUrl, topLogprobs, expectReferenceAnswer, greedy, noiseImage, userWithImages, writeServedVisionModel,
  type FamilyName, type Format, type RawImage, type ServedVisionModel,
} from './vision-serving';

const CASES: Array<[FamilyName, Format]> = [
  ['gemma3', 'hf'], ['gemma3', 'gguf'], ['llava', 'hf'], ['llava', 'gguf'], ['qwen2_5_vl', 'hf'], ['qwen2_5_vl', 'gguf'],
];

needs(STORIES).describe('chat with images on a real server', () => {
  const written = new Map<FamilyName, Promise<ServedVisionModel>>();
  const modelOf = (family: FamilyName) => {
    if (!written.has(family)) written.set(family, writeServedVisionModel(family));
    return written.get(family)!;
  };
  afterAll(async () => {
    for (const model of written.values()) (await model).remove();
  });

  describe.each(CASES)('%s from %s', (family, format) => {
    let model: ServedVisionModel;
    let server: TestServer;
    let client: OpenAI;
    let images: RawImage[];
    let urls: string[];

    beforeAll(async () => {
      model = await modelOf(family);
      server = await startServer(['--max-model-len', '256'], { model: model.paths[format] });
      client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
      images = [noiseImage(...model.imageSize, 1), noiseImage(...model.imageSize, 2)];
      urls = await Promise.all(images.map((image) => dataUrl(image)));
    }, SERVER_START_TIMEOUT_MS);
    afterAll(() => server?.stop());

    const ask = (url: string) => client.chat.completions.create(greedy([userWithImages('Look:', [url])]));

    it("answers with the reference's tokens and logprobs, counting the image tokens", async () => {
      const first = answerOf(await ask(urls[0]));
      const completion = await ask(urls[1]);
      const second = answerOf(completion);
      const again = answerOf(await ask(urls[0]));
      expectReferenceAnswer(model, first, [images[0]]);
      expectReferenceAnswer(model, second, [images[1]]);
      expect(completion.usage!.prompt_tokens).toBe(second.promptTokenIds.length);
      expect(again).toEqual(first);
      // Same prompt ids but other pixels: the image reaches the output.
      expect(second.promptTokenIds).toEqual(first.promptTokenIds);
      expect(second.logprobs).not.toEqual(first.logprobs);
    });

    it('streams the same answer, with usage', async () => {
      const whole = await ask(urls[1]);
      const stream = await client.chat.completions.create({ ...greedy([userWithImages('Look:', [urls[1]])]), stream: true, stream_options: { include_usage: true } });
      let text = '';
      let usage: OpenAI.CompletionUsage | null | undefined;
      const logprobs: Array<Map<number, number>> = [];
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        logprobs.push(...topLogprobs(chunk.choices[0]?.logprobs?.content ?? []));
        if (chunk.usage) usage = chunk.usage;
      }
      expect({ text, logprobs, usage }).toEqual({ text: whole.choices[0].message.content, logprobs: answerOf(whole).logprobs, usage: whole.usage });
    });
  });
});
