// MoE families on the real server, driven with the official `openai` client: a random Mixtral HF
// directory and a qwen3moe GGUF converted from a random Qwen3-MoE directory answer completions
// with the greedy tokens of the float64 reference, and chat through their template.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig } from '../../bench/random-llama';
import { loadModel } from '../../src/model/load-model';
import type { DecoderArchConfig } from '../../src/model/types';
import { loadOptions } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { greedyTokenIds, serveWithClient } from '../helpers/openai-greedy';
import { referenceMoeForward } from '../helpers/reference-moe';
import { argmax, NATIVE_ADDON } from '../helpers/runner-driver';
import { SERVER_START_TIMEOUT_MS } from '../helpers/server';
import { convertToGguf, STORIES } from '../helpers/write-decoder-files';
import { writeMoeHfDir, type MoeLayout } from '../helpers/write-moe-files';

const SHAPE: Partial<DecoderArchConfig> = { hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 512, maxPositionEmbeddings: 512, tieWordEmbeddings: false };
const FAMILIES: Array<{ layout: MoeLayout; config: DecoderArchConfig; serve: 'directory' | 'gguf' }> = [
  { layout: 'mixtral', serve: 'directory', config: llamaConfig({ ...SHAPE, intermediateSize: 32, numExperts: 4, numExpertsPerToken: 2, expertIntermediateSize: 32, normTopKProb: true }) },
  { layout: 'qwen3moe', serve: 'gguf', config: llamaConfig({ ...SHAPE, architecture: 'qwen3moe', qkNorm: true, headDim: 32, intermediateSize: 64, numExperts: 8, numExpertsPerToken: 2, expertIntermediateSize: 32, normTopKProb: true }) },
];
const PROMPT = [1, 77, 301, 12, 45, 9, 260, 33];

describe.each(FAMILIES)('$layout ($serve) on the real server', ({ layout, config, serve }) => {
  needs(STORIES, NATIVE_ADDON).describe('openai client', () => {
    let tmp: string;
    let served: Awaited<ReturnType<typeof serveWithClient>> | undefined;
    let want: number[];

    beforeAll(async () => {
      tmp = mkdtempSync(join(tmpdir(), `ortllm-${layout}-`));
      const dir = join(tmp, layout);
      await writeMoeHfDir(dir, config, layout, 51);
      const model = await loadModel(loadOptions(dir, { skipTokenizer: true }));
      let path = dir;
      if (serve === 'gguf') await convertToGguf(model, (path = join(tmp, `${layout}.gguf`)));
      const tokens = [...PROMPT];
      for (let i = 0; i < 6; i++) tokens.push(argmax(referenceMoeForward(model.config, model.weights!, tokens).at(-1)!));
      want = tokens.slice(PROMPT.length);
      served = await serveWithClient(path, 'moe');
    }, SERVER_START_TIMEOUT_MS);

    afterAll(async () => {
      await served?.server.stop();
      rmSync(tmp, { recursive: true, force: true });
    });

    it('completions: greedy tokens of the float64 reference', async () => {
      expect(await greedyTokenIds(served!.client, 'moe', PROMPT, 6)).toEqual(want);
      expect(served!.server.output()).toMatch(/decoder backend: onnx-segments/);
    });

    it('chat: the template renders and the model answers', async () => {
      const { choices, usage } = await served!.client.chat.completions.create({ model: 'moe', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 4, temperature: 0 });
      expect([choices[0].message.role, usage!.completion_tokens]).toEqual(['assistant', 4]);
    });
  });
});
