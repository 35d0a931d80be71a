/** @jest-environment ./test/helpers/ort-environment.js */
// What a draft model must share with its target, refused at start-up by name: the vocabulary
// (its size, and each id's piece), a context of max_model_len, and being a decoder that generates.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInProcessEngine } from '../../../../src/engine';
import { checkDraftModel } from '../../../../src/engine/speculative/draft-model-checks';
import type { LoadedModel } from '../../../../src/model/types';
import { engineOptions, loadStories, STORIES } from '../engine-fixtures';
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

  it('refuses pooling and encoder-decoder models', () => {
    const target = { config: model.config, tokenizer: model.tokenizer, maxModelLen: 256 };
    const pooling: LoadedModel = { ...model, output: { kind: 'pooled', pooling: 'MEAN' } };
    expect(() => checkDraftModel(pooling, target)).toThrow(/is a pooling model \(pooled\); a draft model must be a decoder-only generation model/);
    const speech: LoadedModel = { ...model, output: { kind: 'transcription' } };
    expect(() => checkDraftModel(speech, target)).toThrow(/is an encoder-decoder model/);
    expect(() => checkDraftModel(model, target)).not.toThrow();
  });
});
