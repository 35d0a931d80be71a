// gemma3 (a Gemma3ForConditionalGeneration directory: text tower only) and gemma2 (a GGUF
// conversion) served by the real server, driven by the official openai client: greedy token ids
// and logprobs from token-id prompts longer than the sliding window match the float64 reference;
// chat renders through a template and generates.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { gemmaConfigJson, randomGemmaTensors, writeGemmaGguf, writeGemmaHfDir } from '../../bench/random-gemma';
import { needs } from '../helpers/needs';
import { referenceGemmaForward } from '../helpers/reference-gemma';
import { NATIVE_ADDON } from '../helpers/runner-driver';
import { SERVER_START_TIMEOUT_MS, defaultTestModel, startServer, type TestServer } from '../helpers/server';

const STORIES = defaultTestModel();
const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300];
const MAX_TOKENS = 6;
const TEMPLATE = "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}<start_of_turn>model\n";

/** The reference's greedy continuation of PROMPT and each chosen token's logprob. */
function referenceGreedy(json: Record<string, unknown>, tensors: Map<string, Float32Array>): { ids: number[]; logprobs: number[] } {
  const tokens = [...PROMPT];
  const logprobs: number[] = [];
  for (let i = 0; i < MAX_TOKENS; i++) {
    const logits = referenceGemmaForward(json, tensors, tokens).at(-1)!;
    let best = 0;
    for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
    const max = logits[best];
    const logSum = Math.log(logits.reduce((sum, z) => sum + Math.exp(z - max), 0));
    tokens.push(best);
    logprobs.push(-logSum);
  }
  return { ids: tokens.slice(PROMPT.length), logprobs };
}

const FAMILIES = [
  { name: 'gemma3 (Gemma3ForConditionalGeneration directory)', json: gemmaConfigJson('gemma3', { final_logit_softcapping: 4.0 }), gguf: false },
  { name: 'gemma2 (GGUF conversion)', json: gemmaConfigJson('gemma2'), gguf: true },
];

for (const { name, json, gguf } of FAMILIES) needs(STORIES, NATIVE_ADDON).describe(`${name} served`, () => {
  const tensors = randomGemmaTensors(json, 21);
  let tmp: string;
  let server: TestServer;
  let client: OpenAI;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-gemma-e2e-'));
    const dir = join(tmp, 'model');
    await writeGemmaHfDir(dir, json, tensors, { layout: gguf ? 'causal' : 'conditional', tokenizerGguf: STORIES });
    const model = gguf ? join(tmp, 'model.gguf') : dir;
    if (gguf) await writeGemmaGguf(dir, model, STORIES);
    server = await startServer(['--served-model-name', 'gemma', '--chat-template', TEMPLATE, '--kv-cache-dtype', 'float32'], { model });
    client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused' });
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('greedy ids and logprobs from a token-id prompt longer than the window match the reference', async () => {
    const expected = referenceGreedy(json, tensors);
    const r = (await client.completions.create({
      model: 'gemma',
      prompt: PROMPT,
      max_tokens: MAX_TOKENS,
      temperature: 0,
      logprobs: 1,
      // vLLM's extra fields.
      ...({ return_token_ids: true, ignore_eos: true } as object),
    })) as OpenAI.Completions.Completion & { choices: Array<{ token_ids: number[] }> };
    expect(r.choices[0].token_ids).toEqual(expected.ids);
    const got = r.choices[0].logprobs!.token_logprobs!;
    got.forEach((lp, i) => expect(Math.abs(lp - expected.logprobs[i])).toBeLessThan(1e-4));
  });

  it('chat renders through the template and generates', async () => {
    const r = await client.chat.completions.create({ model: 'gemma', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 5, temperature: 0 });
    expect(r.choices[0].message.role).toBe('assistant');
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
  });
});
