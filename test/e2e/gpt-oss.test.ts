/** @jest-environment ./test/helpers/ort-environment.js */
// A random gpt-oss GGUF (MXFP4 experts, as released; window 4 under the prompts) served by the
// real server (float32 KV cache) and used through the official `openai` client: completion logprobs equal the
// float64 reference's log-softmax, and chat runs through a plain template (the harmony format
// is the tokenizer part's).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gptOssConfig, randomGptOssWeights, writeGptOssGguf } from '../../bench/random-gpt-oss';
import { readGgufFile } from '../../src/model/gguf/gguf-file';
import { ggufTokenizerMetadata } from '../../src/model/gguf/write-model';
import type { GptOssArchConfig } from '../../src/model/gpt-oss/gpt-oss-config';
import { loadModel } from '../../src/model/load-model';
import { loadOptions } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { referenceGptOss } from '../helpers/reference-gpt-oss';
import { NATIVE_ADDON } from '../helpers/runner-driver';
import { SERVER_START_TIMEOUT_MS, defaultTestModel, startServing, type Serving } from './completions-helpers';

const PROMPT = [1, 403, 261, 9, 77, 300, 45, 120, 8, 64];

needs(defaultTestModel(), NATIVE_ADDON).describe('gpt-oss served through the openai client', () => {
  let s: Serving;
  let dir: string;
  let path: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpt-oss-e2e-'));
    path = join(dir, 'gpt-oss-mxfp4.gguf');
    const config = gptOssConfig();
    writeGptOssGguf(path, config, randomGptOssWeights(config, 3), ggufTokenizerMetadata(await readGgufFile(defaultTestModel())), 'mxfp4');
    s = await startServing(['--max-model-len', '256', '--kv-cache-dtype', 'float32'], { model: path });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await s?.server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('greedy completion: each token is the reference argmax and its logprob the reference log-softmax', async () => {
    const r: any = await s.client.completions.create({ model: s.model, prompt: PROMPT, max_tokens: 6, temperature: 0, logprobs: 1, return_tokens_as_token_ids: true } as any);
    const lp = r.choices[0].logprobs;
    const ids: number[] = lp.tokens.map((t: string) => Number(t.slice('token_id:'.length)));
    expect(ids).toHaveLength(6);
    const model = await loadModel(loadOptions(path, { skipTokenizer: true }));
    const logits = referenceGptOss(model.config as GptOssArchConfig, model.weights!, [...PROMPT, ...ids]);
    ids.forEach((id, i) => {
      const row = logits[PROMPT.length - 1 + i];
      const max = Math.max(...row);
      const logSum = max + Math.log(row.reduce((a, v) => a + Math.exp(v - max), 0));
      expect(id).toBe(row.indexOf(max));
      expect(Math.abs(lp.token_logprobs[i] - (row[id] - logSum))).toBeLessThan(1e-4);
    });
  });

  it('chat completions answer with a plain template', async () => {
    const r = await s.client.chat.completions.create({ model: s.model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 5, temperature: 0 });
    expect(r.choices[0].finish_reason).toBe('length');
    expect(r.usage?.completion_tokens).toBe(5);
  });
});
