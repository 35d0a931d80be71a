// Shared by the vision e2e files: the seeded tiny vision-language models written to a temp
// directory in each format, noise images encoded by sharp, chat requests with image parts, and
// the check of a served answer against the float64 reference (vision-chat-reference.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import sharp from 'sharp';
import { loadHfImageProcessorConfig } from '../../src/model/vision/load-processor-config';
import { preprocessImage } from '../../src/model/vision/preprocess-image';
import type { PreprocessedImage } from '../../src/model/vision/preprocessed-image';
import { writeQwenVlGguf, writeQwenVlHfDir } from '../helpers/qwen-vl-files';
import { gemmaOrLlavaReference, qwenVlReference, type VisionReference } from '../helpers/vision-chat-reference';
import { visionConfigJson, writeVisionGguf, writeVisionHfDir } from '../helpers/write-vision-models';

export type FamilyName = 'gemma3' | 'llava' | 'qwen2_5_vl';
export type Format = 'hf' | 'gguf';

export interface ServedVisionModel {
  family: FamilyName;
  /** Paths by format (the GGUF text model has its mmproj beside it). */
  paths: Record<Format, string>;
  /** Width and height of the test images: the tower's native size, where both formats' processors agree. */
  imageSize: [number, number];
  /** Image rows per test image (the image tokens an image adds). */
  rowsPerImage: number;
  reference: VisionReference;
  /** The Hugging Face processor's input for an image (the reference's pixels). */
  preprocess(image: RawImage): PreprocessedImage;
  /** Deletes the written files. */
  remove(): void;
}

export interface RawImage {
  width: number;
  height: number;
  data: Uint8Array;
}

const QWEN_SEED = 11;

/**
 * Writes `family`'s tiny model in both formats under a new temp directory. Gemma 3's text model
 * gets a sliding window longer than the test prompts: with the writer's window of 5, its last
 * position never sees an image.
 */
export async function writeServedVisionModel(family: FamilyName): Promise<ServedVisionModel> {
  const root = mkdtempSync(join(tmpdir(), `ortllm-vision-e2e-${family}-`));
  const remove = () => rmSync(root, { recursive: true, force: true });
  const hf = join(root, 'hf');
  if (family === 'qwen2_5_vl') {
    await writeQwenVlHfDir(hf, QWEN_SEED);
    const gguf = await writeQwenVlGguf(join(root, 'gguf'), QWEN_SEED);
    const processor = loadHfImageProcessorConfig(hf, {});
    return {
      family, paths: { hf, gguf: gguf.text }, imageSize: [112, 84], rowsPerImage: 12, reference: qwenVlReference(QWEN_SEED),
      preprocess: (image) => preprocessImage(processor, image), remove,
    };
  }
  const base = visionConfigJson(family);
  const configOverrides = family === 'gemma3' ? { text_config: { ...(base.text_config as object), sliding_window: 512 } } : {};
  const written = await writeVisionHfDir(family, hf, { configOverrides });
  const gguf = await writeVisionGguf(family, hf, join(root, 'gguf'), written);
  const processor = loadHfImageProcessorConfig(hf, {});
  const side = (written.json.vision_config as { image_size: number }).image_size;
  return {
    family, paths: { hf, gguf }, imageSize: [side, side], rowsPerImage: 16, reference: gemmaOrLlavaReference(family, written),
    preprocess: (image) => preprocessImage(processor, image), remove,
  };
}

/** Seeded noise pixels (every image of a seed is the same). */
export function noiseImage(width: number, height: number, seed: number): RawImage {
  const data = new Uint8Array(width * height * 3);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < data.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    data[i] = (s >>> 0) & 0xff;
  }
  return { width, height, data };
}

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif';

/** The image encoded as a `data:` URL by sharp (lossless where the format allows it). */
export async function dataUrl(image: RawImage, format: ImageFormat = 'png'): Promise<string> {
  const raw = sharp(Buffer.from(image.data), { raw: { width: image.width, height: image.height, channels: 3 } });
  const encoded = format === 'webp' ? raw.webp({ lossless: true }) : format === 'jpeg' ? raw.jpeg({ quality: 90 }) : format === 'gif' ? raw.gif() : raw.png();
  return `data:image/${format};base64,${(await encoded.toBuffer()).toString('base64')}`;
}

/** The pixels a server decodes from `url` (a lossy format's own, not the original's). */
export async function decodedPixels(url: string): Promise<RawImage> {
  const bytes = Buffer.from(url.slice(url.indexOf(',') + 1), 'base64');
  const { data, info } = await sharp(bytes, { animated: false }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data: new Uint8Array(data) };
}

export type ChatParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming & { return_token_ids?: boolean; return_tokens_as_token_ids?: boolean };

/** One user message: `text`, then each image as an image_url part. */
export function userWithImages(text: string, urls: readonly string[]): OpenAI.Chat.Completions.ChatCompletionMessageParam {
  return { role: 'user', content: [{ type: 'text', text }, ...urls.map((url) => ({ type: 'image_url' as const, image_url: { url } }))] };
}

/** Greedy, with the top logprobs of each step by token id, so the reference can be held against it. */
export function greedy(messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[], maxTokens = 4): ChatParams {
  return { model: '', messages, max_tokens: maxTokens, temperature: 0, logprobs: true, top_logprobs: TOP_LOGPROBS, return_token_ids: true, return_tokens_as_token_ids: true };
}

const TOP_LOGPROBS = 5;

export interface ServedAnswer {
  promptTokenIds: number[];
  tokenIds: number[];
  /** Each step's top logprobs by token id (the chosen token's among them). */
  logprobs: Array<Map<number, number>>;
}

/** Each step's top logprobs, keyed by id (`return_tokens_as_token_ids` spells tokens `token_id:N`). */
export function topLogprobs(content: ReadonlyArray<OpenAI.Chat.Completions.ChatCompletionTokenLogprob>): Array<Map<number, number>> {
  return content.map((step) => new Map(step.top_logprobs.map((top) => [Number(top.token.slice('token_id:'.length)), top.logprob])));
}

/** The ids and logprobs of a non-streamed answer made with `greedy`. */
export function answerOf(completion: OpenAI.Chat.Completions.ChatCompletion): ServedAnswer {
  const extra = completion as unknown as { prompt_token_ids: number[]; choices: Array<{ token_ids: number[] }> };
  return {
    promptTokenIds: extra.prompt_token_ids,
    tokenIds: extra.choices[0].token_ids,
    logprobs: topLogprobs(completion.choices[0].logprobs!.content!),
  };
}

/**
 * Holds a served greedy answer against the reference on the same prompt ids: every image run has
 * the image's row count, each token is the reference's argmax (unless the reference's top two are
 * within 1e-3) and each of the step's top logprobs is the reference's within `tolerance`.
 */
export function expectReferenceAnswer(model: ServedVisionModel, answer: ServedAnswer, images: readonly RawImage[], tolerance = 2e-3): void {
  const { reference } = model;
  const imageTokens = answer.promptTokenIds.filter((t) => t === reference.imageTokenId).length;
  expect(imageTokens).toBe(images.length * model.rowsPerImage);
  const all = [...answer.promptTokenIds, ...answer.tokenIds];
  const logprobs = reference.logprobs(all, images.map((image) => model.preprocess(image)));
  answer.tokenIds.forEach((token, i) => {
    const row = logprobs[answer.promptTokenIds.length - 1 + i];
    const sorted = [...row].sort((a, b) => b - a);
    if (sorted[0] - sorted[1] > 1e-3) expect({ step: i, token }).toEqual({ step: i, token: row.indexOf(sorted[0]) });
    expect(answer.logprobs[i].size).toBe(TOP_LOGPROBS);
    for (const [id, logprob] of answer.logprobs[i]) expect({ step: i, id, diff: Math.abs(logprob - row[id]) < tolerance }).toEqual({ step: i, id, diff: true });
  });
}
