/** @jest-environment ./test/helpers/ort-environment.js */
// What a draft model must share with its target, refused at start-up by name: the vocabulary
// (its size, and each id's piece), a context of max_model_len, and being a decoder that generates;
// the same vocabulary in another format is accepted.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInProcessEngine } from '../../../../src/engine';
import { checkDraftModel } from '../../../../src/engine/speculative/draft-model-checks';
import type { DecoderArchConfig, LoadedModel } from '../../../../src/model/types';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from '../engine-fixtures';
import { hfConfigJson, writeDecoderHfDir } from '../../../helpers/write-decoder-files';
import { needs } from '../../../helpers/needs';
import { draftConfig, writeRandomDraft } from './spec-fixtures';

const onStories = needs(STORIES);

onStories.describe('draft models refused at start-up', () => {
  let dir: string;
  let model: LoadedModel;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ortllm-draft-refused-'));
    model = await loadStories();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const start = (draft: string) => createInProcessEngine(model, engineOptions({ speculative: draftConfig(draft) }));

  it('refuses another vocabulary size', async () => {
    const draft = await writeRandomDraft(join(dir, 'vocab256.gguf'), { vocabSize: 256 });
    await expect(start(draft)).rejects.toThrow(/has vocab_size 256, the target 512; target and draft must share one vocabulary/);
  });

  it('refuses a vocabulary whose pieces differ', async () => {
    const draft = await writeRandomDraft(join(dir, 'swapped.gguf'), {}, (pieces) => {
      [pieces[300], pieces[301]] = [pieces[301], pieces[300]];
      return pieces;
    });
    await expect(start(draft)).rejects.toThrow(/token 300 is "[^"]+", the target's "[^"]+"; target and draft must share one vocabulary/);
  });

  it('refuses a context shorter than max_model_len', async () => {
    const draft = await writeRandomDraft(join(dir, 'short.gguf'), { maxPositionEmbeddings: 128 });
    await expect(start(draft)).rejects.toThrow(/has a context of 128 tokens, shorter than max_model_len 256/);
  });

  it('accepts a Hugging Face directory with the same vocabulary as the GGUF target', async () => {
    const config: DecoderArchConfig = { ...(model.config as DecoderArchConfig), hiddenSize: 32, intermediateSize: 64, numLayers: 1, numHeads: 4, numKvHeads: 2, headDim: 8 };
    const hfDir = join(dir, 'hf-draft');
    await writeDecoderHfDir(hfDir, config, hfConfigJson(config), 5);
    const engine = await start(hfDir);
    try {
      const [p] = prompts(model, 1);
      expect((await finalOutput(engine, request(p, { max_tokens: 8 }))).outputs[0].tokenIds).toHaveLength(8);
    } finally {
      await engine.shutdown();
    }
  });

  it('refuses pooling and encoder-decoder models', () => {
    const target = { config: model.config, tokenizer: model.tokenizer, maxModelLen: 256 };
    const pooling: LoadedModel = { ...model, output: { kind: 'pooled', pooling: 'MEAN' } };
    expect(() => checkDraftModel(pooling, target)).toThrow(/is a pooling model \(pooled\); a draft model must be a decoder-only generation model/);
    const speech: LoadedModel = { ...model, output: { kind: 'transcription' } };
    expect(() => checkDraftModel(speech, target)).toThrow(/is an encoder-decoder model/);
    expect(() => checkDraftModel(model, target)).not.toThrow();
  });
});
