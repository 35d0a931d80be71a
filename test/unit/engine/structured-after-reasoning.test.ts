/** @jest-environment ./test/helpers/ort-environment.js */
// Structured outputs that wait for the end of a reasoning section (EngineRequest
// structuredOutputsAfter): the real runner (stories260K) and xgrammar. The model is pushed by
// logit_bias to write a marker token first; the grammar then takes over from the next token.

import { createInProcessEngine } from '../../../src/engine';
import { TextWatch } from '../../../src/engine/core/text-watch';
import type { EngineClient } from '../../../src/engine/types';
import type { LoadedModel, Tokenizer } from '../../../src/model/types';
import { needs } from '../../helpers/needs';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from './engine-fixtures';

describe('TextWatch', () => {
  it('sees a text spread over tokens, and split UTF-8 characters', () => {
    const bytes = (s: string) => new TextEncoder().encode(s);
    const pieces = [bytes('ab</th'), bytes('ink>'), bytes('é').slice(0, 1), bytes('é').slice(1)];
    const tokenizer = { tokenBytes: (id: number) => pieces[id] } as unknown as Tokenizer;
    const watch = new TextWatch(tokenizer, '</think>');
    expect([0, 1].map((id) => watch.push(id))).toEqual([false, true]);
    const accent = new TextWatch(tokenizer, 'é');
    expect([2, 3].map((id) => accent.push(id))).toEqual([false, true]);
  });
});

needs(STORIES).describe('structured outputs after the reasoning section (stories260K, xgrammar)', () => {
  let model: LoadedModel;
  let engine: EngineClient;

  beforeAll(async () => {
    model = await loadStories();
    engine = await createInProcessEngine(model, engineOptions());
  });
  afterAll(async () => {
    await engine?.shutdown();
  });

  it('the constraint starts after the marker text; without a marker it starts at once', async () => {
    const tokenizer = model.tokenizer!;
    // A word token whose text cannot begin the constrained output.
    const marker = tokenizer.encode('Once upon', { addSpecialTokens: false }).slice(-1);
    const markerText = new TextDecoder().decode(tokenizer.tokenBytes(marker[0]));
    expect(markerText).toBe(' upon');
    const params = { structured_outputs: { regex: '[ab]{4}' }, logit_bias: { [marker[0]]: 100 }, max_tokens: 12, ignore_eos: false };
    const prompt = prompts(model, 1)[0];

    const after = (await finalOutput(engine, request(prompt, params, { structuredOutputsAfter: markerText }))).outputs[0];
    // The biased marker is written while the grammar waits; after it, the grammar masks it out.
    expect(after.text.startsWith(markerText)).toBe(true);
    expect(after.text.slice(markerText.length)).toMatch(/^[ab]{4}$/);
    expect(after.finishReason).toBe('stop');

    const atOnce = (await finalOutput(engine, request(prompt, params))).outputs[0];
    expect(atOnce.text).toMatch(/^[ab]{4}$/);
  });
});
