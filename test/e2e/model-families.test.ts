// The model families of docs/model-families.md served by the real server and driven with the
// official `openai` client: a random Qwen3 HF directory (q/k norms, head_dim from config.json)
// and a Mistral one with a sliding window shorter than the prompt answer completions with the
// greedy tokens of the float64 reference forward, and chat through their chat template.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { llamaConfig } from '../../bench/random-llama';
import { loadModel } from '../../src/model/load-model';
import { loadOptions } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { referenceForward } from '../helpers/reference-forward';
import { argmax, NATIVE_ADDON } from '../helpers/runner-driver';
import { SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { hfConfigJson, STORIES, writeDecoderHfDir } from '../helpers/write-decoder-files';

const QWEN3 = llamaConfig({ architecture: 'qwen3', qkNorm: true, hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 32, vocabSize: 512, rmsNormEps: 1e-6, ropeTheta: 1e6, maxPositionEmbeddings: 512, tieWordEmbeddings: true });
const MISTRAL = llamaConfig({ hiddenSize: 64, intermediateSize: 96, numLayers: 2, numHeads: 4, numKvHeads: 2, vocabSize: 512, maxPositionEmbeddings: 512, tieWordEmbeddings: false });
const PROMPT = [1, 77, 301, 12, 45, 9, 260, 33];

/** Greedy continuation of `prompt` by the reference forward. */
function referenceGreedy(model: Awaited<ReturnType<typeof loadModel>>, prompt: number[], count: number): number[] {
  const tokens = [...prompt];
  for (let i = 0; i < count; i++) {
    const logits = referenceForward(model.config, model.weights!, tokens);
    tokens.push(argmax(logits[logits.length - 1]));
  }
  return tokens.slice(prompt.length);
}

const FAMILIES = [
  { name: 'qwen3', config: QWEN3, json: hfConfigJson(QWEN3, { use_sliding_window: false, sliding_window: null, max_window_layers: 28 }) },
  // The window (5) is shorter than the prompt plus its continuation.
  { name: 'mistral', config: MISTRAL, json: hfConfigJson(MISTRAL, { sliding_window: 5 }) },
];

for (const { name, config, json } of FAMILIES) needs(STORIES, NATIVE_ADDON).describe(`${name} HF directory on the real server`, () => {
  let tmp: string;
  let server: TestServer;
  let client: OpenAI;
  let dir: string;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-families-'));
    dir = join(tmp, name);
    await writeDecoderHfDir(dir, config, json, 31);
    server = await startServer(['--served-model-name', 'tiny', '--max-model-len', '512'], { model: dir });
    client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('completions: greedy tokens of the float64 reference', async () => {
    const want = referenceGreedy(await loadModel(loadOptions(dir, { skipTokenizer: true })), PROMPT, 6);
    const res = await client.completions.create({
      model: 'tiny',
      prompt: PROMPT,
      max_tokens: 6,
      temperature: 0,
      logprobs: 1,
      ignore_eos: true,
      return_tokens_as_token_ids: true,
    } as OpenAI.CompletionCreateParamsNonStreaming);
    const got = res.choices[0].logprobs!.tokens!.map((t) => Number(t.replace('token_id:', '')));
    expect(got).toEqual(want);
  });

  it('chat: the template renders and the model answers', async () => {
    const res = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 5, temperature: 0 });
    expect(res.choices[0].message.role).toBe('assistant');
    expect(res.usage!.prompt_tokens).toBeGreaterThan(5);
    expect(res.usage!.completion_tokens).toBeGreaterThan(0);
  });
});
