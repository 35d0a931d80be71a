/** @jest-environment ./test/helpers/ort-environment.js */
// Whisper's graphs against the independent reference forward (test/helpers/whisper-reference.ts)
// on a small random Whisper written in the real Hugging Face layout and loaded by the server's
// loader: the encoder output, then the runner (paged self-attention, cross-attention blocks
// filled by a batched encoder run, prefill and batched decode steps) greedily decoding two
// different inputs side by side; logits within 1e-3 and the same greedy tokens.

import { join } from 'node:path';
import { WHISPER_FEATURES } from '../../../src/model/audio/feature-config';
import { LogMelExtractor } from '../../../src/model/audio/log-mel';
import { buildWhisperEncoderGraph, WhisperEncoderIO } from '../../../src/model/graph/whisper-encoder-graph';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import { createSession } from '../../../src/model/runner/session';
import type { LoadedModel, ModelRunner, StepSequence, WhisperArchConfig } from '../../../src/model/types';
import { whisperSpecialTokens } from '../../../src/model/whisper/whisper-tokens';
import { loadOptions } from '../../helpers/model-files';
import { argmax, maxAbsDiff } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';
import { readWav, soxToWav, speak, SPEECH_TOOLS, tempDir } from '../../helpers/speech';
import { referenceDecoder, referenceEncoder } from '../../helpers/whisper-reference';
import { TINY_TEST_WHISPER, writeWhisperDir } from '../../helpers/write-whisper-dir';

const shape = TINY_TEST_WHISPER;
// 1500 encoder positions fill 94 blocks of 16 with 4 padding rows: the masked path.
const BLOCK_SIZE = 16;
const STEPS = 6;

/** A recorded-style input: espeak-ng speech resampled by sox, or (tools missing) a two-tone chirp. */
function speechSamples(dir: string): Float32Array {
  if (!needs(...SPEECH_TOOLS).present) {
    console.warn('*** whisper-graph test: using a synthetic chirp instead of espeak-ng speech ***');
    return Float32Array.from({ length: 3 * 16000 }, (_, i) => 0.3 * Math.sin(i * (0.05 + i * 1e-6)) + 0.2 * Math.sin(i * 0.31));
  }
  const wav = speak('Whisper on the same engine.', join(dir, 'speech.wav'));
  return readWav(soxToWav(wav, join(dir, 'speech16k.wav'), 16000)).samples;
}

describe('Whisper graphs vs the reference forward', () => {
  const dir = tempDir('ortllm-whisper-');
  let model: LoadedModel;
  let runner: ModelRunner;
  let inputs: Float32Array[];
  let encoded: Float64Array[][];

  beforeAll(async () => {
    writeWhisperDir(join(dir.path, 'model'));
    model = await loadModel(loadOptions(join(dir.path, 'model')));
    const extractor = new LogMelExtractor(WHISPER_FEATURES);
    const sweep = Float32Array.from({ length: 7 * 16000 }, (_, i) => 0.5 * Math.sin(2 * Math.PI * (100 * (i / 16000) + 300 * (i / 16000) ** 2)));
    inputs = [extractor.extract(speechSamples(dir.path)), extractor.extract(sweep)];
    encoded = inputs.map((f) => referenceEncoder(model.weights!, shape, f));
    runner = await createRunner(model, { blockSize: BLOCK_SIZE, numBlocks: 1000, device: 'cpu' });
  }, 120_000);

  afterAll(async () => {
    await runner?.dispose();
    dir.remove();
  });

  it('loads the HF directory as an encoder-decoder config', () => {
    expect(model.config.architecture).toBe('whisper');
    expect(model.config.encoder).toMatchObject({ numLayers: 2, numHeads: 2, numPositions: 1500, numMelBins: 80 });
    expect(model.config.numLayers).toBe(2);
    expect(model.config.headDim).toBe(8);
    expect(model.contextLength).toBe(shape.targetPositions);
  });

  it('computes the encoder output of a batch (max abs diff < 1e-3)', async () => {
    const session = await createSession(buildWhisperEncoderGraph(model.config as WhisperArchConfig, model.weights!, { keepQuantized: false, blockSize: BLOCK_SIZE }), { device: 'cpu' });
    try {
      const batch = new Float32Array(inputs.length * inputs[0].length);
      inputs.forEach((f, i) => batch.set(f, i * f.length));
      const out = await session.run({ [WhisperEncoderIO.features]: new (await import('onnxruntime-node')).Tensor('float32', batch, [2, 80, 3000]) }, [WhisperEncoderIO.hidden]);
      const hidden = out[WhisperEncoderIO.hidden].data as Float32Array;
      expect(out[WhisperEncoderIO.hidden].dims).toEqual([2, 1500, shape.dModel]);
      encoded.forEach((rows, b) => {
        const flat = new Float64Array(rows.length * shape.dModel);
        rows.forEach((r, t) => flat.set(r, t * shape.dModel));
        expect(maxAbsDiff(hidden.subarray(b * flat.length, (b + 1) * flat.length), flat)).toBeLessThan(1e-3);
      });
    } finally {
      await session.release();
    }
  });

  it('decodes two inputs side by side greedily like the reference (logits within 1e-3)', async () => {
    const tokens = whisperSpecialTokens(model.tokenizer!);
    const prompt = [tokens.startOfTranscript, tokens.languages.get('en')!, tokens.transcribe!, tokens.noTimestamps];
    const vocab = model.config.vocabSize;
    // Interleaved, non-contiguous block ids so paging bugs cannot hide.
    let next = 0;
    const take = (n: number) => Array.from({ length: n }, () => (next++ * 37 + 11) % 1000);
    const crossTables = inputs.map(() => take(Math.ceil(1500 / BLOCK_SIZE)));
    const selfTables = inputs.map(() => take(Math.ceil(shape.targetPositions / BLOCK_SIZE)));
    expect(new Set([...crossTables.flat(), ...selfTables.flat()]).size).toBe(next);
    const sequences = inputs.map(() => [...prompt]);

    // Prefill both prompts in one step; the encoder runs once for both (they carry features).
    const prefill: StepSequence[] = inputs.map((features, b) => ({
      tokens: prompt,
      positionOffset: 0,
      blockTable: selfTables[b],
      allLogits: true,
      encoder: { blockTable: crossTables[b], features },
    }));
    let result = await runner.step(prefill);
    // Different audio, different logits: each sequence's cross-attention reads its own blocks.
    expect(maxAbsDiff(result.logits.subarray(0, vocab), result.logits.subarray(vocab, 2 * vocab))).toBeGreaterThan(1e-2);
    inputs.forEach((_, b) => {
      const expected = referenceDecoder(model.weights!, shape, encoded[b], prompt);
      const rows = result.allLogits[b]!;
      expected.forEach((row, i) => expect(maxAbsDiff(rows.subarray(i * vocab, (i + 1) * vocab), row)).toBeLessThan(1e-3));
    });

    for (let step = 0; step < STEPS; step++) {
      const chosen = inputs.map((_, b) => argmax(result.logits.subarray(b * vocab, (b + 1) * vocab)));
      inputs.forEach((_, b) => {
        const reference = referenceDecoder(model.weights!, shape, encoded[b], sequences[b]);
        const last = reference[reference.length - 1];
        expect(maxAbsDiff(result.logits.subarray(b * vocab, (b + 1) * vocab), last)).toBeLessThan(1e-3);
        expect(chosen[b]).toBe(argmax(last));
        sequences[b].push(chosen[b]);
      });
      // One decode step for both sequences together, cross blocks already filled (no features).
      result = await runner.step(
        inputs.map((_, b) => ({
          tokens: [sequences[b][sequences[b].length - 1]],
          positionOffset: sequences[b].length - 1,
          blockTable: selfTables[b],
          encoder: { blockTable: crossTables[b] },
        })),
      );
    }
  });
});
