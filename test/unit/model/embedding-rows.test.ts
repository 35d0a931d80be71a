/** @jest-environment ./test/helpers/ort-environment.js */
// Token embedding rows read from the model file (WeightTensor.file) must equal the rows copied
// from the loaded table, for float32 and quantized GGUF tables; a runner that reads them from
// the file lets the loaded table go, and one with a small table keeps it in memory.
import { loadModel } from '../../../src/model/load-model';
import { EmbeddingRows, FILE_ROWS_MIN_BYTES } from '../../../src/model/runner/embedding-rows';
import { createRunner } from '../../../src/model/runner';
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import type { ModelArchConfig, ModelWeights, RunnerOptions } from '../../../src/model/types';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { BlockAllocator, NATIVE_ADDON } from '../../helpers/runner-driver';
import { needs } from '../../helpers/needs';

const EMBEDDING = 'model.embed_tokens.weight';
/** Each file with the form its embedding table has (float32, and the GGML block formats). */
const FILES: Array<[string, string]> = [
  ['stories260K.gguf', 'f32'],
  ['stories260K-Q8_0.gguf', 'q8_0'],
  ['rand256-Q4_K_M.gguf', 'q4_k'],
  ['rand256-Q6_K.gguf', 'q6_k'],
];

for (const [file, form] of FILES) {
  const path = sharedModel(file);
  needs(path).describe(`embedding rows of ${file}`, () => {
    let weights: ModelWeights;
    let config: ModelArchConfig;
    let fromFile: EmbeddingRows;
    let inMemory: EmbeddingRows;
    beforeAll(async () => {
      const model = await loadGgufModel(path, { loadWeights: true });
      weights = model.weights!;
      config = model.config;
      fromFile = new EmbeddingRows(weights, EMBEDDING, config, 0);
      inMemory = new EmbeddingRows(weights, EMBEDDING, config, Infinity);
    });
    afterAll(() => {
      fromFile?.close();
    });

    it('reads every row from the file, equal to the loaded table', () => {
      const table = weights.get(EMBEDDING);
      expect(table.kind === 'f32' ? 'f32' : table.format).toBe(form);
      expect(fromFile.fileBacked).toBe(true);
      expect(inMemory.fileBacked).toBe(false);
      const ids = Array.from({ length: config.vocabSize }, (_, i) => i);
      // Every id once, then repeats in another order (one row per token, as a prompt has them).
      const tokens = [...ids, ...ids.slice().reverse().filter((i) => i % 7 === 0)];
      const rows = fromFile.rows(tokens);
      expect(rows.length).toBe(tokens.length * config.hiddenSize);
      // Bit for bit (a byte comparison: jest's toEqual walks typed arrays slowly).
      const expected = inMemory.rows(tokens);
      expect(Buffer.from(rows.buffer).equals(Buffer.from(expected.buffer))).toBe(true);
      expect(rows.some((v) => v !== 0)).toBe(true);
    });

    it('refuses an id outside the vocabulary, naming it', () => {
      for (const rows of [fromFile, inMemory]) {
        expect(() => rows.rows([1, config.vocabSize])).toThrow(`token id ${config.vocabSize} is outside the vocabulary (0..${config.vocabSize - 1})`);
        expect(() => rows.rows([-1])).toThrow(/token id -1 is outside the vocabulary/);
        expect(() => rows.rows([1.5])).toThrow(/token id 1.5 is outside the vocabulary/);
      }
    });

    it('gives no file span to tensors whose bytes the loader changed', () => {
      // GGUF llama Q/K rows are permuted back to HF order on load.
      expect(weights.get('model.layers.0.self_attn.q_proj.weight').file).toBeUndefined();
      expect(weights.get('model.layers.0.self_attn.v_proj.weight').file).toBeDefined();
    });
  });
}

const STORIES = sharedModel('stories260K.gguf');
const RUNNER_OPTIONS: RunnerOptions = { blockSize: 4, numBlocks: 16, device: 'cpu', intraOpThreads: 1, attention: 'native', consumeWeights: true };
needs(STORIES, NATIVE_ADDON).describe('a segmented runner with file-backed embedding rows', () => {
  it('drops the loaded table when it consumes the weights, and refuses steps once disposed', async () => {
    const model = await loadModel(loadOptions(STORIES));
    expect(model.weights!.has(EMBEDDING)).toBe(true);
    const runner = await createRunner(model, { ...RUNNER_OPTIONS, embeddingFileMinBytes: 0 });
    expect(model.weights!.has(EMBEDDING)).toBe(false);
    const table = new BlockAllocator(runner).table(3);
    const result = await runner.step([{ tokens: [1, 400, 20], positionOffset: 0, blockTable: table }]);
    expect(result.logits.length).toBe(model.config.vocabSize);
    await runner.dispose();
    await expect(runner.step([{ tokens: [1], positionOffset: 0, blockTable: table }])).rejects.toThrow(/embedding table is closed/);
  });
});

needs(STORIES, NATIVE_ADDON).describe('a segmented runner with a small embedding table', () => {
  it('keeps the table in memory by default (a positional read per row costs more than its 128 KB save)', async () => {
    const model = await loadModel(loadOptions(STORIES));
    const bytes = model.weights!.get(EMBEDDING).data.byteLength;
    expect(bytes).toBeLessThan(FILE_ROWS_MIN_BYTES);
    const runner = await createRunner(model, RUNNER_OPTIONS);
    try {
      expect(model.weights!.has(EMBEDDING)).toBe(true);
      const table = new BlockAllocator(runner).table(3);
      const result = await runner.step([{ tokens: [1, 400, 20], positionOffset: 0, blockTable: table }]);
      expect(result.logits.length).toBe(model.config.vocabSize);
    } finally {
      await runner.dispose();
    }
  });
});
