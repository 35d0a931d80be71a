// `node dist/bench/vision-parity.js TEXT.gguf [--mmproj PATH] [--text-before A] [--text-after B]
//  [--tokens 16] [--top 5] [--tolerance 1e-4] [--tie 1e-3] [--peer PATH] [--seed 3]`: one prompt with
// one image, greedy, on llama.cpp's llama-server (--mmproj; /completion with prompt_string and
// multimodal_data) and on ortllm (chat with an image_url part), both serving the same GGUF pair
// with a float32 KV cache (docs/model-parity.md). The image is seeded and has the tower's native
// size (Gemma 3: clip.vision.image_size square; Qwen: 112 x 112), so neither side resizes.
// ortllm renders "A<placeholder>B" through a --chat-template written here; llama.cpp gets the
// string its mtmd tokenizes to the same ids. Checked first: the prompt token counts, and the text
// ids (llama.cpp's /tokenize of mtmd's text chunks against ortllm's prompt_token_ids without the
// image run). Then the generated ids and the top logprobs, compared as bench/llama-parity.ts does.
// Exit status 1 when the prompts differ or the comparison fails.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import sharp from 'sharp';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { findMmproj } from '../src/model/vision/load-vision';
import { arg, compare, defaultPeer, files, llamaStepsOf, post, startLlamaServer, type Step } from './llama-parity';
import { startServer, type RunningServer } from './processes';

const repoRoot = resolve(__dirname, '..', '..');

/** How one projector's image appears: ortllm's template placeholder, and the text llama.cpp's mtmd puts around its marker. */
interface ImageText {
  placeholder: string;
  /** What ortllm's processor adds around the image besides mtmd's img_beg / img_end, as text llama.cpp should get. */
  around: [before: string, after: string];
  /** mtmd's img_beg and img_end for the projector (tools/mtmd/mtmd.cpp). */
  mtmd: [begin: string, end: string];
  imageSize(imageSizeKey: number): [width: number, height: number];
}

const IMAGE_TEXT: Record<string, ImageText> = {
  // vLLM's Gemma 3 processor puts "\n\n" before <start_of_image> and after <end_of_image>.
  gemma3: { placeholder: '<start_of_image>', around: ['\n\n', '\n\n'], mtmd: ['<start_of_image>', '<end_of_image>'], imageSize: (s) => [s, s] },
  // Sides a multiple of 28 with at least 8 image tokens: no resize on either side.
  'qwen2.5vl_merger': { placeholder: '<|vision_start|><|image_pad|><|vision_end|>', around: ['', ''], mtmd: ['<|vision_start|>', '<|vision_end|>'], imageSize: () => [112, 112] },
};
IMAGE_TEXT.qwen2vl_merger = IMAGE_TEXT['qwen2.5vl_merger'];

/** A seeded RGB image as a PNG data URL's base64. */
async function seededPng(width: number, height: number, seed: number): Promise<string> {
  const rgb = Buffer.alloc(width * height * 3);
  let s = seed >>> 0;
  for (let i = 0; i < rgb.length; i++) rgb[i] = (s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 24;
  return (await sharp(rgb, { raw: { width, height, channels: 3 } }).png().toBuffer()).toString('base64');
}

/** The same prompt in both servers' terms. */
interface Prompt {
  /** ortllm's --chat-template: the text, the placeholder, the text. */
  template: string;
  /** llama-server's prompt_string (mtmd's marker where the image goes). */
  llamaString: string;
  /** mtmd's text chunks before and after the image, as it tokenizes them. */
  llamaChunks: [string, string];
}

/**
 * `spacePrefix`: the vocabulary is SentencePiece with add_space_prefix (llama.cpp's rule, which
 * ortllm's GGUF tokenizer follows): text at the start or after a special token gets a leading
 * space. ortllm tokenizes the rendered text with the placeholder, then adds `around` as tokens of
 * its own (each with that space); mtmd tokenizes `around` inside its text chunks, so the spaces
 * are spelled out there where text meets them.
 */
function promptFor(text: ImageText, before: string, after: string, spacePrefix: boolean): Prompt {
  const [b, a] = text.around;
  const space = (s: string, around: string) => (spacePrefix && s !== '' && around !== '' ? ' ' : '');
  const llamaBefore = `${before}${space(before, b)}${b}`;
  const llamaAfter = `${a}${space(after, a)}${after}`;
  return {
    template: `{{ bos_token }}{{ ${JSON.stringify(before)} }}${text.placeholder}{{ ${JSON.stringify(after)} }}`,
    llamaString: `${llamaBefore}<__media__>${llamaAfter}`,
    llamaChunks: [`${llamaBefore}${text.mtmd[0]}`, `${text.mtmd[1]}${llamaAfter}`],
  };
}

/** llama-server: the generated steps, the prompt's token count (tokens_evaluated; the image's positions included), mtmd's text ids, and each listed token's text. */
async function llamaRun(server: RunningServer, prompt: Prompt, png: string, tokens: number, top: number): Promise<{ steps: Step[]; promptTokens: number; textIds: number[]; idOf: Map<string, number> }> {
  // This llama-server draws its media marker at random (LLAMA_MEDIA_MARKER pins it): /props names it.
  const marker = ((await (await fetch(`${server.baseUrl}/props`)).json()) as { media_marker?: string }).media_marker ?? '<__media__>';
  const body = { prompt: { prompt_string: prompt.llamaString.replace('<__media__>', marker), multimodal_data: [png] }, n_predict: tokens, temperature: 0, n_probs: top, post_sampling_probs: false, cache_prompt: false, return_tokens: true };
  const r = await post(`${server.baseUrl}/completion`, body);
  const tokenize = async (content: string, addSpecial: boolean) => (await post(`${server.baseUrl}/tokenize`, { content, add_special: addSpecial, parse_special: true })).tokens as number[];
  const textIds = [...(await tokenize(prompt.llamaChunks[0], true)), ...(await tokenize(prompt.llamaChunks[1], false))];
  const listed = ((r.completion_probabilities ?? []) as Array<{ top_logprobs: Array<{ id: number; token: string }> }>).flatMap((p) => p.top_logprobs);
  return { steps: llamaStepsOf(r), promptTokens: r.tokens_evaluated as number, textIds, idOf: uniqueTexts(listed) };
}

/** Token text -> id, leaving out texts that two ids share (the chat API names a top logprob by its text only). */
function uniqueTexts(tokens: Array<{ id: number; token: string }>): Map<string, number> {
  const byText = new Map<string, number | null>();
  for (const { id, token } of tokens) byText.set(token, byText.has(token) && byText.get(token) !== id ? null : id);
  return new Map([...byText].filter((e): e is [string, number] => e[1] !== null));
}

/** ortllm's chat: the generated steps (top logprobs keyed by the ids llama.cpp gave those texts) and its prompt ids. */
async function ortllmRun(server: RunningServer, png: string, tokens: number, top: number, idOf: Map<string, number>): Promise<{ steps: Step[]; promptIds: number[] }> {
  const content = [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }];
  const r = await post(`${server.baseUrl}/v1/chat/completions`, {
    messages: [{ role: 'user', content }],
    max_tokens: tokens,
    temperature: 0,
    logprobs: true,
    top_logprobs: top,
    return_token_ids: true,
  });
  const choice = (r.choices as Array<{ token_ids: number[]; logprobs: { content: Array<{ top_logprobs: Array<{ token: string; logprob: number }> }> } }>)[0];
  const steps = choice.token_ids.map((id, i) => ({
    id,
    top: new Map(choice.logprobs.content[i].top_logprobs.filter((t) => idOf.has(t.token)).map((t) => [idOf.get(t.token)!, t.logprob])),
  }));
  return { steps, promptIds: r.prompt_token_ids as number[] };
}

async function main(): Promise<void> {
  const [textPath] = files();
  if (!textPath) throw new Error('usage: node dist/bench/vision-parity.js TEXT.gguf [--mmproj PATH] [--text-before A] [--text-after B] [--tokens N]');
  const mmproj = arg('mmproj', findMmproj(textPath) ?? '');
  if (!mmproj) throw new Error(`no mmproj*.gguf beside ${textPath}`);
  const peer = arg('peer', defaultPeer());
  const tokens = Number(arg('tokens', '16'));
  const top = Number(arg('top', '5'));
  const tolerance = Number(arg('tolerance', '1e-4'));
  const tie = Number(arg('tie', '1e-3'));
  const meta = (await readGgufFile(mmproj)).metadata;
  const projector = String(meta['clip.vision.projector_type'] ?? meta['clip.projector_type']);
  const text = IMAGE_TEXT[projector];
  if (!text) throw new Error(`${mmproj}: projector ${projector} has no prompt layout here (${Object.keys(IMAGE_TEXT).join(', ')})`);
  const [width, height] = text.imageSize(Number(meta['clip.vision.image_size']));
  const png = await seededPng(width, height, Number(arg('seed', '3')));
  const textMeta = (await readGgufFile(textPath)).metadata;
  const spacePrefix = textMeta['tokenizer.ggml.model'] === 'llama' && textMeta['tokenizer.ggml.add_space_prefix'] !== false;
  const prompt = promptFor(text, arg('text-before', 'Look'), arg('text-after', ' at it'), spacePrefix);
  // The model's own context (llama-server caps its slot there; ortllm refuses more).
  const context = Number(textMeta[`${String(textMeta['general.architecture'])}.context_length`]);

  const llama = await startLlamaServer(peer, textPath, context, ['--mmproj', mmproj]);
  let expected;
  try {
    expected = await llamaRun(llama, prompt, png, tokens, top);
  } finally {
    await llama.stop(); // never two spinning servers at once
  }
  const tmp = mkdtempSync(join(tmpdir(), 'vision-parity-'));
  const templatePath = join(tmp, 'template.jinja');
  writeFileSync(templatePath, prompt.template);
  const ortllm = await startServer(
    process.execPath,
    [resolve(repoRoot, 'dist', 'src', 'main.js'), 'serve', textPath, '--port', '0', '--kv-cache-dtype', 'float32', '--max-model-len', String(context), '--chat-template', templatePath, '--served-model-name', 'parity', '--disable-log-stats'],
    dirname(textPath),
    'ortllm',
  );
  let got;
  try {
    got = await ortllmRun(ortllm, png, tokens, top, expected.idOf);
  } finally {
    await ortllm.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
  const imageId = mostRepeated(got.promptIds);
  const ortllmText = got.promptIds.filter((id) => id !== imageId);
  const sameCount = got.promptIds.length === expected.promptTokens;
  const sameText = ortllmText.join(',') === expected.textIds.join(',');
  console.log(`${textPath} (${projector}, ${width}x${height} image): prompt ${got.promptIds.length} tokens on ortllm, ${expected.promptTokens} on llama.cpp${sameCount ? '' : '  FAIL'}`);
  console.log(`  text ids ${sameText ? 'identical' : `differ: ortllm ${ortllmText.join(',')} / llama.cpp ${expected.textIds.join(',')}  FAIL`}`);
  const v = compare(expected.steps, got.steps, tolerance, tie);
  console.log(`  ${v.line}${v.ok ? '' : '  FAIL'}`);
  const ok = sameCount && sameText && v.ok;
  console.log(ok ? 'vision parity: ok' : 'vision parity: FAIL');
  process.exitCode = ok ? 0 : 1;
}

function mostRepeated(ids: number[]): number {
  const counts = new Map<number, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0][0];
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 2;
  });
}
