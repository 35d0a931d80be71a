/** @jest-environment ./test/helpers/ort-environment.js */
// BERT and XLM-RoBERTa served for pooling: random checkpoints written in the real Hugging Face
// layout, run through the loader, the architecture registry and the pooling runner, checked
// against an independent float64 reference forward and independent tokenizers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../src/model/load-model';
import { createPoolingRunner } from '../../../src/model/runner/pooling-runner';
import type { LoadedModel, PoolingRunner } from '../../../src/model/types';
import { loadOptions } from '../../helpers/model-files';
import { cosine, referenceClassifierLogits, referenceEncoderStates, referencePool, writeEncoderDir, type WrittenEncoder } from '../../helpers/encoder-model';
import { referenceBertEncode, referenceXlmrEncode } from '../../helpers/test-tokenizers';

let tmp: string;
beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-encoder-'))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const TEXTS = ['The quick brown fox jumps over the lazy dog.', 'hello world', 'A cat sat on the mat, unbelievable!'];
const XLMR_TEXTS = ['Paris is the capital of France.', 'der Hund', 'die Katze schläft , hello world !'];
const SHAPE = { hidden: 32, layers: 2, heads: 4, intermediate: 64, maxPositions: 64 };

async function withRunner<T>(model: LoadedModel, fn: (runner: PoolingRunner) => Promise<T>): Promise<T> {
  const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1 });
  try {
    return await fn(runner);
  } finally {
    await runner.dispose();
  }
}

function normalized(v: ArrayLike<number>): number[] {
  const n = Math.hypot(...Array.from(v));
  return Array.from(v, (x) => x / n);
}

describe('BERT embedder (BertModel, WordPiece tokenizer.json)', () => {
  let written: WrittenEncoder;
  beforeAll(() => {
    written = writeEncoderDir(join(tmp, 'bert-mean'), { family: 'bert', numLabels: null, ...SHAPE }, 11, { pooling: 'mean', normalize: true });
  });

  it('tokenizes as an independent WordPiece does', async () => {
    const model = await loadModel({ ...loadOptions(written.dir), loadWeights: false });
    for (const text of TEXTS) expect(model.tokenizer!.encode(text)).toEqual(referenceBertEncode(text).ids);
    expect(model.tokenizer!.encodePair!('what is a panda?', 'a bear.')).toEqual({
      ids: referenceBertEncode('what is a panda?', 'a bear.').ids,
      tokenTypeIds: referenceBertEncode('what is a panda?', 'a bear.').typeIds,
    });
  });

  it('MEAN pooling from 1_Pooling/config.json matches the reference within 1e-4 cosine, batched or alone', async () => {
    const model = await loadModel(loadOptions(written.dir));
    expect(model.output).toEqual({ kind: 'pooled', pooling: 'MEAN' });
    expect(model.pooler).toMatchObject({ task: 'embed', normalize: true, sentencePairs: true });
    const ids = TEXTS.map((t) => referenceBertEncode(t).ids);
    await withRunner(model, async (runner) => {
      const batched = await runner.encode(ids.map((tokens) => ({ tokens })));
      for (let i = 0; i < ids.length; i++) {
        const expected = referencePool(referenceEncoderStates(written, ids[i]), 'MEAN');
        expect(cosine(batched[i], expected)).toBeGreaterThan(1 - 1e-4);
        const [alone] = await runner.encode([{ tokens: ids[i] }]);
        normalized(alone).forEach((v, j) => expect(v).toBeCloseTo(normalized(batched[i])[j], 5));
      }
    });
  });

  it('CLS pooling when the Pooling module says so, and by default without sentence-transformers files', async () => {
    const cls = writeEncoderDir(join(tmp, 'bert-cls'), { family: 'bert', numLabels: null, ...SHAPE, hiddenAct: 'gelu_new' }, 12, { pooling: 'cls', normalize: false });
    const plain = writeEncoderDir(join(tmp, 'bert-plain'), { family: 'bert', numLabels: null, ...SHAPE }, 13);
    for (const w of [cls, plain]) {
      const model = await loadModel(loadOptions(w.dir));
      expect(model.output).toEqual({ kind: 'pooled', pooling: 'CLS' });
      const ids = referenceBertEncode(TEXTS[0]).ids;
      const [got] = await withRunner(model, (runner) => runner.encode([{ tokens: ids }]));
      expect(cosine(got, referencePool(referenceEncoderStates(w, ids), 'CLS'))).toBeGreaterThan(1 - 1e-4);
    }
  });
});

describe('XLM-RoBERTa embedder (XLMRobertaModel, Unigram tokenizer.json)', () => {
  it('tokenizes as an independent Unigram does, and offsets positions by padding_idx + 1', async () => {
    const written = writeEncoderDir(join(tmp, 'xlmr'), { family: 'xlm-roberta', numLabels: null, ...SHAPE, layerNormEps: 1e-5 }, 21, { pooling: 'cls', normalize: true });
    const model = await loadModel(loadOptions(written.dir));
    expect(model.contextLength).toBe(SHAPE.maxPositions - 2);
    const ids = XLMR_TEXTS.map((t) => model.tokenizer!.encode(t));
    expect(ids).toEqual(XLMR_TEXTS.map((t) => referenceXlmrEncode(t)));
    const got = await withRunner(model, (runner) => runner.encode(ids.map((tokens) => ({ tokens }))));
    ids.forEach((tokens, i) => expect(cosine(got[i], referencePool(referenceEncoderStates(written, tokens), 'CLS'))).toBeGreaterThan(1 - 1e-4));
  });
});

describe('cross-encoders (*ForSequenceClassification)', () => {
  it('BERT: sentence pairs with token type ids through pooler + classifier give the reference logit', async () => {
    const written = writeEncoderDir(join(tmp, 'bert-ce'), { family: 'bert', numLabels: 1, ...SHAPE }, 31);
    const model = await loadModel(loadOptions(written.dir));
    expect(model.output).toEqual({ kind: 'classifier', pooling: 'CLS', numLabels: 1 });
    expect(model.pooler).toMatchObject({ task: 'classify', activation: 'sigmoid', labels: ['label_0'] });
    const pairs = [['what is a panda?', 'a bear eats bamboo.'], ['what is a panda?', 'paris is the capital of france.']];
    const encoded = pairs.map(([a, b]) => model.tokenizer!.encodePair!(a, b));
    const got = await withRunner(model, (runner) => runner.encode(encoded.map((e) => ({ tokens: e.ids, tokenTypeIds: e.tokenTypeIds }))));
    encoded.forEach((e, i) => {
      const expected = referenceClassifierLogits(written, referenceEncoderStates(written, e.ids, e.tokenTypeIds)[0]);
      expect(got[i][0]).toBeCloseTo(expected[0], 4);
    });
  });

  it('XLM-RoBERTa: the classification head (dense, tanh, out_proj) with 3 labels, softmax by default', async () => {
    const written = writeEncoderDir(join(tmp, 'xlmr-ce'), { family: 'xlm-roberta', numLabels: 3, ...SHAPE }, 32);
    const model = await loadModel(loadOptions(written.dir));
    expect(model.pooler).toMatchObject({ activation: 'softmax', labels: ['label_0', 'label_1', 'label_2'] });
    const ids = model.tokenizer!.encodePair!('Paris is', 'the capital of France.').ids;
    expect(ids).toEqual(referenceXlmrEncode('Paris is', 'the capital of France.'));
    const [got] = await withRunner(model, (runner) => runner.encode([{ tokens: ids }]));
    const expected = referenceClassifierLogits(written, referenceEncoderStates(written, ids)[0]);
    Array.from(got).forEach((v, j) => expect(v).toBeCloseTo(expected[j], 4));
  });
});
