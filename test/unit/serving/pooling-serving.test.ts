// The pooling routes' serving layer over a scripted engine (no model): input forms, truncation
// and length limits, Matryoshka + normalisation, base64 as the openai SDKs decode it, chunked
// embeddings, classifier activations, score pairing (1:1, 1:N, N:N), rerank order and top_n,
// and vLLM's 400s with the offending `param`.

import { RequestValidationError } from '../../../src/engine/errors';
import type { EncodeRequest, EngineClient, PoolingRequestOutput } from '../../../src/engine/types';
import { createTokenizerFromHfFiles } from '../../../src/model/tokenizer';
import type { PoolerSettings } from '../../../src/model/types';
import { ClassifyServing } from '../../../src/serving/pooling/classify-serving';
import { EmbeddingServing } from '../../../src/serving/pooling/embedding-serving';
import { classProbabilities, embeddingVector, encodeVector } from '../../../src/serving/pooling/pooled-vectors';
import { PoolingServing } from '../../../src/serving/pooling/pooling-serving';
import { ScoreServing } from '../../../src/serving/pooling/score-serving';
import type { ServingOptions } from '../../../src/serving/serving-options';
import { fakeArch } from '../../helpers/fake-engine';
import { poolerSettings } from '../../helpers/pooler-settings';
import { bertTokenizerFiles, referenceBertEncode } from '../../helpers/test-tokenizers';
import { InlineTextProcessor } from '../../../src/engine/text/text-processor';

const OPTS: ServingOptions = {
  servedModelNames: ['m'],
  returnTokensAsTokenIds: false,
  enablePromptTokensDetails: false,
  enableForceIncludeUsage: false,
  responseRole: 'assistant',
  trustRequestChatTemplate: false,
  maxLogprobs: 20,
  schedulingPolicy: 'fcfs',
};

const EMBED = poolerSettings();
const CROSS_ENCODER: PoolerSettings = { ...EMBED, task: 'classify', pooling: 'CLS', activation: 'sigmoid', labels: ['relevance'] };
const CLASSIFIER: PoolerSettings = { ...EMBED, task: 'classify', pooling: 'CLS', activation: 'softmax', labels: ['neg', 'pos'] };

const tok = bertTokenizerFiles();
const tokenizer = createTokenizerFromHfFiles(tok.tokenizerJson, tok.tokenizerConfig);

/**
 * A scripted pooling engine: the "pooled vector" of a prompt is [length, mean id, first id, last id,
 * Σ type ids] (width 5), or its first `labels` entries for a classifier.
 */
function fakeEngine(pooler: PoolerSettings, maxModelLen = 32): EngineClient & { requests: EncodeRequest[] } {
  const requests: EncodeRequest[] = [];
  const width = pooler.task === 'classify' ? pooler.labels.length : 5;
  return {
    requests,
    modelConfig: { ...fakeArch(tok.vocabSize), hiddenSize: 5 },
    modelOutput: pooler.task === 'classify' ? { kind: 'classifier', pooling: 'CLS', numLabels: width } : { kind: 'pooled', pooling: pooler.pooling },
    pooler,
    audioFeatures: null,
    maxModelLen,
    maxNumSeqs: 8,
    tokenizer,
    chatTemplate: null,
    text: new InlineTextProcessor(tokenizer, null),
    eosTokenIds: [],
    generationDefaults: {},
    ensureCapacity: () => undefined,
    reserve: (sequences: number) => ({ sequences, release: () => undefined }),
    generate: () => {
      throw new Error('pooling only');
    },
    async encode(request: EncodeRequest): Promise<PoolingRequestOutput> {
      requests.push(request);
      const ids = request.promptTokenIds;
      if (ids.length > maxModelLen) throw new RequestValidationError('engine: too long', 'input');
      const v = [ids.length, ids.reduce((a, b) => a + b, 0) / ids.length, ids[0], ids[ids.length - 1], (request.tokenTypeIds ?? []).reduce((a, b) => a + b, 0)];
      return { requestId: request.requestId, promptTokenIds: ids, data: Float32Array.from(v.slice(0, width)) };
    },
    abort: () => undefined,
    health: () => ({ alive: true }),
    stats: () => ({ numRunning: 0, numWaiting: 0, kvCacheUsage: 0, numBlocks: 0, blockSize: 16 }),
    onIteration: () => () => undefined,
    shutdown: async () => undefined,
    sleep: async () => undefined,
    wakeUp: async () => undefined,
    sleepState: () => ({ sleeping: false, level: 0 }),
    resetPrefixCache: async () => undefined,
    loadLora: async () => undefined,
    unloadLora: async () => undefined,
  };
}

async function rejection(p: Promise<unknown>): Promise<RequestValidationError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RequestValidationError);
  return err as RequestValidationError;
}

describe('vectors', () => {
  it('truncates to the Matryoshka dimensions before normalising', () => {
    expect(Array.from(embeddingVector(Float32Array.of(3, 4, 12), 2, true))).toEqual([0.6000000238418579, 0.800000011920929]);
    expect(Array.from(embeddingVector(Float32Array.of(3, 4, 12), null, false))).toEqual([3, 4, 12]);
    expect(Array.from(embeddingVector(new Float32Array(3), null, true))).toEqual([0, 0, 0]);
  });

  it('base64 is little-endian float32 (what the openai SDKs decode), or float16 / bfloat16 / big-endian when asked', () => {
    const v = Float32Array.of(1.5, -2, 0.1);
    const b64 = encodeVector(v, { format: 'base64', dtype: 'float32', endianness: 'native' }) as string;
    const bytes = Buffer.from(b64, 'base64');
    expect([0, 1, 2].map((i) => bytes.readFloatLE(4 * i))).toEqual(Array.from(v));
    const big = Buffer.from(encodeVector(v, { format: 'base64', dtype: 'float32', endianness: 'big' }) as string, 'base64');
    expect(big.readFloatBE(0)).toBe(1.5);
    const half = Buffer.from(encodeVector(v, { format: 'base64', dtype: 'float16', endianness: 'little' }) as string, 'base64');
    expect([half.length, half.readUInt16LE(0), half.readUInt16LE(2)]).toEqual([6, 0x3e00, 0xc000]);
    const bf16 = Buffer.from(encodeVector(v, { format: 'base64', dtype: 'bfloat16', endianness: 'little' }) as string, 'base64');
    expect(bf16.readUInt16LE(0)).toBe(0x3fc0);
    expect(encodeVector(v, { format: 'float', dtype: 'float16', endianness: 'big' })).toEqual(Array.from(v));
  });

  it('applies softmax or sigmoid, or nothing without use_activation', () => {
    const probs = classProbabilities(Float32Array.of(0, Math.log(3)), 'softmax', true);
    expect(probs[0]).toBeCloseTo(0.25, 6);
    expect(probs[1]).toBeCloseTo(0.75, 6);
    expect(classProbabilities(Float32Array.of(0), 'sigmoid', true)).toEqual([0.5]);
    expect(classProbabilities(Float32Array.of(2, -1), 'softmax', false)).toEqual([2, -1]);
  });
});

describe('/v1/embeddings', () => {
  it('takes a string, strings, token ids or token-id lists; usage counts prompt tokens', async () => {
    const engine = fakeEngine(EMBED);
    const serving = new EmbeddingServing(engine, OPTS);
    const one = await serving.create({ input: 'hello world', normalize: false }, 'abc');
    expect(one).toMatchObject({ id: 'embd-abc', object: 'list', model: 'm', usage: { prompt_tokens: 4, completion_tokens: 0, total_tokens: 4, prompt_tokens_details: null } });
    expect(one.data).toEqual([{ index: 0, object: 'embedding', embedding: [4, expect.any(Number), 2, 3, 0] }]);
    expect(engine.requests[0].promptTokenIds).toEqual(referenceBertEncode('hello world').ids);
    const many = await serving.create({ input: ['hello world', 'the fox'], normalize: false }, 'x');
    expect(many.data.map((d) => (d.embedding as number[])[0])).toEqual([4, 4]);
    const ids = await serving.create({ input: [[5, 6, 7], [8]], normalize: false }, 'y');
    expect(ids.data.map((d) => (d.embedding as number[]).slice(0, 1))).toEqual([[3], [1]]);
    expect(ids.usage.prompt_tokens).toBe(4);
    const single = await serving.create({ input: [5, 6, 7], normalize: false }, 'z');
    expect(single.data).toHaveLength(1);
  });

  it('one prompt or several: the same vectors; the client\'s abort reaches the engine and a failed forward is a 500 either way', async () => {
    const engine = fakeEngine(EMBED);
    const serving = new EmbeddingServing(engine, OPTS);
    const alone = await serving.create({ input: 'the fox', normalize: true }, 'a');
    const among = await serving.create({ input: ['hello world', 'the fox'], normalize: true }, 'b');
    expect(among.data[1].embedding).toEqual(alone.data[0].embedding);
    for (const input of ['the fox', ['the fox', 'hello world']]) {
      const client = new AbortController();
      const seen: AbortSignal[] = [];
      const hanging = { ...engine, encode: (_r: EncodeRequest, signal?: AbortSignal) => new Promise<PoolingRequestOutput>((_resolve, reject) => {
        seen.push(signal!);
        signal!.addEventListener('abort', () => reject(new Error('aborted by the client')));
      }) };
      const pending = new EmbeddingServing(hanging, OPTS).create({ input }, 'c', client.signal);
      const prompts = Array.isArray(input) ? 2 : 1;
      while (seen.length < prompts) await new Promise((resolve) => setImmediate(resolve));
      client.abort(new Error('gone'));
      await expect(pending).rejects.toMatchObject({ status: 500 });
      expect(seen.length).toBe(prompts);
      expect(seen.every((s) => s.aborted)).toBe(true);
      const failing = { ...engine, encode: async () => { throw new Error('forward failed'); } };
      await expect(new EmbeddingServing(failing, OPTS).create({ input }, 'd')).rejects.toMatchObject({ status: 500, message: 'forward failed' });
    }
  });

  it('createJson (what the route sends) is JSON.stringify of create\'s response, byte for byte, floats and base64 alike', async () => {
    const engine = fakeEngine({ ...EMBED, matryoshka: true, matryoshkaDimensions: null });
    const serving = new EmbeddingServing(engine, OPTS);
    const bodies = [
      { input: 'hello world' },
      { input: ['hello world', 'the fox'], normalize: false },
      { input: [[5, 6, 7], [8]] },
      { input: 'the fox', dimensions: 3, user: 'u' },
      { input: ['hello world', 'the fox'], encoding_format: 'base64' as const },
      { input: 'the fox', encoding_format: 'base64' as const, embed_dtype: 'bfloat16' as const, endianness: 'big' as const },
    ];
    for (const body of bodies) {
      const object = await serving.create(body, 'same-"id"\u2028');
      const text = await serving.createJson(body, 'same-"id"\u2028');
      // created is the second it ran in: take the text's.
      expect(text).toBe(JSON.stringify({ ...object, created: (JSON.parse(text) as { created: number }).created }));
    }
  });

  it('normalises by default, truncates (-1 = max_model_len, left keeps the last tokens), and refuses long or empty input', async () => {
    const engine = fakeEngine(EMBED, 8);
    const serving = new EmbeddingServing(engine, OPTS);
    const out = await serving.create({ input: [[1, 2, 3, 4]] }, 'n');
    const v = out.data[0].embedding as number[];
    expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    await serving.create({ input: [[1, 2, 3, 4, 5, 6]], truncate_prompt_tokens: 2 }, 't');
    expect(engine.requests.at(-1)!.promptTokenIds).toEqual([5, 6]);
    await serving.create({ input: [[1, 2, 3, 4, 5, 6]], truncate_prompt_tokens: 2, truncation_side: 'right' }, 't');
    expect(engine.requests.at(-1)!.promptTokenIds).toEqual([1, 2]);
    const long = await rejection(serving.create({ input: [Array(9).fill(5)] }, 'l'));
    expect([long.param, long.message]).toEqual([
      'input',
      "This model's maximum context length is 8 tokens. However, you requested 9 tokens in the input for embedding generation. Please reduce the length of the input.",
    ]);
    expect(engine.requests.at(-1)!.promptTokenIds).toHaveLength(2); // nothing reached the engine
    expect((await rejection(serving.create({ input: [] }, 'e'))).param).toBe('input');
    expect((await rejection(serving.create({ input: [[]] }, 'e'))).param).toBe('input');
    expect((await rejection(serving.create({ input: [99999] }, 'e'))).message).toMatch(/out of vocabulary/);
    expect((await rejection(serving.create({}, 'e'))).message).toMatch(/Either `input` or `messages`/);
    expect((await rejection(serving.create({ input: 'x', truncate_prompt_tokens: 9 }, 'e'))).param).toBe('truncate_prompt_tokens');
  });

  it('refuses dimensions unless the model declares Matryoshka support, then truncates and renormalises', async () => {
    const plain = new EmbeddingServing(fakeEngine(EMBED), OPTS);
    const refused = await rejection(plain.create({ input: 'hello', dimensions: 2 }, 'd'));
    expect([refused.param, refused.message]).toEqual(['dimensions', 'Model "m" does not support matryoshka representation, changing output dimensions will lead to poor results.']);
    const listed = new EmbeddingServing(fakeEngine({ ...EMBED, matryoshka: true, matryoshkaDimensions: [2, 4] }), OPTS);
    expect((await rejection(listed.create({ input: 'hello', dimensions: 3 }, 'd'))).message).toBe(
      'Model "m" only supports [2, 4] matryoshka dimensions, use other output dimensions will lead to poor results.',
    );
    const out = await listed.create({ input: 'hello', dimensions: 2 }, 'd');
    const v = out.data[0].embedding as number[];
    expect(v).toHaveLength(2);
    expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    const defaulted = new EmbeddingServing(fakeEngine({ ...EMBED, matryoshka: true, dimensions: 3 }), OPTS);
    expect((await defaulted.create({ input: 'hello' }, 'd')).data[0].embedding).toHaveLength(3);
    expect((await rejection(defaulted.create({ input: 'hello', dimensions: 0 }, 'd'))).message).toBe('Dimensions must be greater than 0');
  });

  it('embeds inputs over max_model_len in chunks and averages them by length (enable_chunked_processing)', async () => {
    const engine = fakeEngine({ ...EMBED, enableChunkedProcessing: true }, 4);
    const serving = new EmbeddingServing(engine, OPTS);
    const out = await serving.create({ input: [[10, 20, 30, 40, 50, 60]], normalize: false }, 'c');
    expect(engine.requests.map((r) => r.promptTokenIds)).toEqual([[10, 20, 30, 40], [50, 60]]);
    // Length-weighted mean of the chunks' means = the mean over all six tokens.
    expect((out.data[0].embedding as number[])[1]).toBeCloseTo(35, 5);
    expect(out.usage.prompt_tokens).toBe(6);
    const capped = new EmbeddingServing(fakeEngine({ ...EMBED, enableChunkedProcessing: true, maxEmbedLen: 5 }, 4), OPTS);
    expect((await rejection(capped.create({ input: [[1, 2, 3, 4, 5, 6]] }, 'c'))).message).toMatch(/maximum embedding input length is 5 tokens/);
  });

  it('renders chat messages with the chat template (no template: 400 on chat_template)', async () => {
    const serving = new EmbeddingServing(fakeEngine(EMBED), OPTS);
    expect((await rejection(serving.create({ messages: [{ role: 'user', content: 'hello' }] }, 'm'))).param).toBe('chat_template');
    expect((await rejection(serving.create({ messages: [], input: 'x' }, 'm'))).message).toMatch(/not both/);
  });
});

describe('/classify and /pooling', () => {
  it('gives probabilities, the argmax label and num_classes', async () => {
    const serving = new ClassifyServing(fakeEngine(CLASSIFIER), OPTS);
    const out = await serving.create({ input: ['hello world', 'the'] }, 'c');
    expect(out.id).toBe('classify-c');
    for (const d of out.data) {
      expect(d.num_classes).toBe(2);
      expect(d.probs.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
      expect(d.label).toBe(d.probs[1] > d.probs[0] ? 'pos' : 'neg');
    }
    const raw = await serving.create({ input: 'hello world', use_activation: false }, 'c');
    expect(raw.data[0].probs).toEqual([4, expect.any(Number)]);
  });

  it('/pooling returns the embedding or the probabilities, and refuses another task', async () => {
    const embed = new PoolingServing(fakeEngine(EMBED), OPTS);
    const out = await embed.create({ input: 'hello world', normalize: false }, 'p');
    expect(out).toMatchObject({ id: 'pool-p', data: [{ index: 0, object: 'pooling', data: [4, expect.any(Number), 2, 3, 0] }] });
    const wrong = await rejection(embed.create({ input: 'x', task: 'classify' }, 'p'));
    expect([wrong.param, wrong.message]).toEqual(['task', "Task classify is not supported, it must be one of the supported tasks: ['embed']."]);
    const classify = new PoolingServing(fakeEngine(CLASSIFIER), OPTS);
    const probs = (await classify.create({ input: 'hello world' }, 'p')).data[0].data as number[];
    expect(probs.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
    expect((await rejection(classify.create({ input: 'x', dimensions: 2 }, 'p'))).param).toBe('dimensions');
  });
});

describe('/score and /rerank', () => {
  it('a cross-encoder scores each pair as one sentence-pair sequence with token type ids, sigmoid applied', async () => {
    const engine = fakeEngine(CROSS_ENCODER);
    const serving = new ScoreServing(engine, OPTS);
    const out = await serving.score({ text_1: 'what is a panda?', text_2: ['a bear.', 'paris'] }, 's');
    const pair = referenceBertEncode('what is a panda?', 'a bear.');
    expect(engine.requests[0]).toMatchObject({ promptTokenIds: pair.ids, tokenTypeIds: pair.typeIds });
    expect(out.data[0]).toEqual({ index: 0, object: 'score', score: 1 / (1 + Math.exp(-pair.ids.length)) });
    expect(out.usage.prompt_tokens).toBe(engine.requests.reduce((n, r) => n + r.promptTokenIds.length, 0));
    const nn = await serving.score({ text_1: ['a', 'b'], text_2: ['c', 'd'] }, 's');
    expect(nn.data).toHaveLength(2);
    const mismatch = await rejection(serving.score({ text_1: ['a', 'b'], text_2: ['c', 'd', 'e'] }, 's'));
    expect(mismatch.message).toBe('Input lengths must be either 1:1, 1:N or N:N');
    expect((await rejection(serving.score({ text_1: [], text_2: 'x' }, 's'))).message).toBe('At least one text element must be given');
    expect((await rejection(serving.score({ text_1: 'x', text_2: [] }, 's'))).message).toBe('At least one text_pair element must be given');
  });

  it('an embedding model scores by cosine similarity, counting both texts and a pad token per pair', async () => {
    const serving = new ScoreServing(fakeEngine(EMBED), OPTS);
    const out = await serving.score({ text_1: 'hello world', text_2: ['hello world', 'the'] }, 's');
    expect(out.data[0].score).toBeCloseTo(1, 9);
    expect(out.data[1].score).toBeLessThan(1);
    // [CLS] hello world [SEP] = 4, [CLS] the [SEP] = 3, plus [PAD] per pair.
    expect(out.usage.prompt_tokens).toBe(4 + 1 + 4 + (4 + 1 + 3));
  });

  it('rerank sorts by relevance_score, keeps top_n, and leaves documents out when asked', async () => {
    const serving = new ScoreServing(fakeEngine(CROSS_ENCODER), OPTS);
    const docs = ['a', 'the quick brown fox jumps', 'hello world'];
    const out = await serving.rerank({ query: 'what', documents: docs }, 'r');
    expect(out.id).toBe('rerank-r');
    expect(out.results.map((r) => r.index)).toEqual([1, 2, 0]); // longer pair -> larger fake logit
    expect(out.results[0].document).toEqual({ text: docs[1] });
    expect(out.usage.total_tokens).toBe(out.usage.prompt_tokens);
    const top = await serving.rerank({ query: 'what', documents: docs, top_n: 1, return_documents: false }, 'r');
    expect(top.results).toEqual([{ index: 1, relevance_score: out.results[0].relevance_score }]);
    expect((await rejection(serving.rerank({ query: 'q', documents: [] }, 'r'))).param).toBe('documents');
  });
});
