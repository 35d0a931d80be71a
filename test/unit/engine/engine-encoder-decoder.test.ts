/** @jest-environment ./test/helpers/ort-environment.js */
// The engine serving an encoder-decoder model (a small random Whisper in HF layout): requests with
// different audio batch together (their encoder runs and decode steps share steps) and give the
// same greedy tokens as each alone; under a KV budget too small for all of them, preemption frees
// the encoder blocks and re-encodes on readmission, with the same outputs; every block comes back.

import { join } from 'node:path';
import { createInProcessEngine } from '../../../src/engine';
import type { EngineClient, EngineRequest } from '../../../src/engine/types';
import { WHISPER_FEATURES } from '../../../src/model/audio/feature-config';
import { LogMelExtractor } from '../../../src/model/audio/log-mel';
import { kvBytesPerBlock } from '../../../src/model/runner';
import { loadModel } from '../../../src/model/load-model';
import type { LoadedModel } from '../../../src/model/types';
import { whisperSpecialTokens } from '../../../src/model/whisper/whisper-tokens';
import { loadOptions } from '../../helpers/model-files';
import { tempDir } from '../../helpers/speech';
import { writeWhisperDir } from '../../helpers/write-whisper-dir';
import { engineOptions, finalOutput, request } from './engine-fixtures';

describe('engine with an encoder-decoder model', () => {
  const dir = tempDir('ortllm-engine-whisper-');
  let model: LoadedModel;
  let features: Float32Array[];
  let prompt: number[];

  beforeAll(async () => {
    writeWhisperDir(join(dir.path, 'model'));
    model = await loadModel(loadOptions(join(dir.path, 'model')));
    const extractor = new LogMelExtractor(WHISPER_FEATURES);
    features = [220, 330, 440, 550, 660].map((hz, i) =>
      extractor.extract(Float32Array.from({ length: (2 + i) * 16000 }, (_, t) => 0.4 * Math.sin((2 * Math.PI * hz * t) / 16000) * Math.sin(t / (900 + 50 * i)))),
    );
    const t = whisperSpecialTokens(model.tokenizer!);
    prompt = [t.startOfTranscript, t.languages.get('en')!, t.transcribe!, t.noTimestamps];
  }, 60_000);
  afterAll(() => dir.remove());

  const withEngine = async (overrides: Parameters<typeof engineOptions>[0], body: (engine: EngineClient) => Promise<void>) => {
    const engine = await createInProcessEngine(model, engineOptions({ maxModelLen: null, blockSize: 8, enablePrefixCaching: true, ...overrides }));
    try {
      await body(engine);
    } finally {
      await engine.shutdown();
    }
  };
  const audioRequest = (input: Float32Array): EngineRequest => request(prompt, { max_tokens: 8 }, { encoderInput: input });

  it('batches requests with different audio and matches each one alone; frees every block', async () => {
    await withEngine({}, async (engine) => {
      const alone: number[][] = [];
      for (const f of features) alone.push((await finalOutput(engine, audioRequest(f))).outputs[0].tokenIds);
      const together = await Promise.all(features.map((f) => finalOutput(engine, audioRequest(f))));
      expect(together.map((o) => o.outputs[0].tokenIds)).toEqual(alone);
      expect(alone.every((tokens) => tokens.length === 8)).toBe(true);
      expect(engine.stats().kvCacheUsage).toBe(0);
    });
  });

  it('preempts and re-encodes under a tiny KV budget, giving the same outputs', async () => {
    // Two requests are admitted with their encoder blocks and one decoder block each (4-token prompts,
    // 8-token blocks); one block is left, so when both grow past 8 tokens one of them is preempted.
    const admitted = Math.ceil(1500 / 8) + 1;
    const budget = (2 * admitted + 1) * kvBytesPerBlock(model.config, 8);
    let expected: number[][] = [];
    await withEngine({}, async (engine) => {
      expected = await Promise.all(features.map(async (f) => (await finalOutput(engine, audioRequest(f))).outputs[0].tokenIds));
    });
    await withEngine({ kvCacheMemoryBytes: budget, maxModelLen: 64 }, async (engine) => {
      let preemptions = 0;
      engine.onIteration((stats) => (preemptions += stats.numPreemptions));
      const got = await Promise.all(features.map(async (f) => (await finalOutput(engine, audioRequest(f))).outputs[0].tokenIds));
      expect(got).toEqual(expected);
      expect(preemptions).toBeGreaterThan(0);
      expect(engine.stats().kvCacheUsage).toBe(0);
    });
  });

  it('asserts every request brings an encoder input of the model\'s size (the edge guarantees it)', async () => {
    await withEngine({}, async (engine) => {
      await expect(finalOutput(engine, request(prompt))).rejects.toThrow(/no encoder input for an encoder-decoder model/);
      await expect(finalOutput(engine, request(prompt, {}, { encoderInput: new Float32Array(10) }))).rejects.toThrow(/encoder input of 10 values/);
    });
  });
});
