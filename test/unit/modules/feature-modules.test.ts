// Routes follow what the served model does (vLLM registers routers by the model's supported
// tasks): generation models get completions and chat, embedding models /v1/embeddings, /pooling,
// /score and /rerank, classifiers /classify and /pooling (+ /score and /rerank with one label),
// speech models /v1/audio/transcriptions and /v1/audio/translations; /invocations routes to the
// request types of the routes the model has.

import { createApp } from '../../../src/app-factory';
import { resolveServerConfig } from '../../../src/config/server-config';
import type { ServedModel } from '../../../src/modules/feature-modules';
import { FakeEngine } from '../../helpers/fake-engine';
import { poolerSettings } from '../../helpers/pooler-settings';

const POOLER = poolerSettings({ pooling: 'CLS', activation: 'sigmoid', labels: ['LABEL_0'] });

const ROUTES = [
  '/v1/completions',
  '/v1/chat/completions',
  '/v1/audio/transcriptions',
  '/v1/audio/translations',
  '/tokenize',
  '/v1/embeddings',
  '/pooling',
  '/classify',
  '/score',
  '/v1/score',
  '/rerank',
  '/v1/rerank',
  '/v2/rerank',
  '/invocations',
];

/** Which of ROUTES answer something other than 404 for a POST with an empty body, and the request types /invocations expects. */
async function registered(servedModel: ServedModel): Promise<{ routes: string[]; invocations: string }> {
  const config = resolveServerConfig({ model: '/models/tiny', disableUvicornAccessLog: true, logLevel: 'error' }, {});
  const app = await createApp(config, { engine: new FakeEngine(), servedModel });
  await app.init();
  const fastify = app.getHttpAdapter().getInstance();
  await fastify.ready();
  try {
    const found: string[] = [];
    for (const url of ROUTES) {
      const res = await fastify.inject({ method: 'POST', url, payload: {} });
      if (res.statusCode !== 404) found.push(url);
    }
    const unmatched = await fastify.inject({ method: 'POST', url: '/invocations', payload: { unrelated: 1 } });
    const expected = /Expected one of: (.*)$/.exec(unmatched.json<{ error: { message: string } }>().error.message);
    return { routes: found, invocations: expected?.[1] ?? '' };
  } finally {
    await app.close();
  }
}

describe('routes by served model', () => {
  it('a speech model has the audio routes and tokenize, and no completions, chat, pooling or /invocations', async () => {
    expect(await registered({ generates: false, transcribes: true, pooler: null })).toEqual({ routes: ['/v1/audio/transcriptions', '/v1/audio/translations', '/tokenize'], invocations: '' });
  });

  it('a generation model has no pooling routes; /invocations routes to chat and completions', async () => {
    expect(await registered({ generates: true, transcribes: false, pooler: null })).toEqual({
      routes: ['/v1/completions', '/v1/chat/completions', '/tokenize', '/invocations'],
      invocations: 'ChatCompletionRequest, CompletionRequest',
    });
  });

  it('an embedding model has embeddings, pooling, score and rerank, and no completions or chat', async () => {
    expect(await registered({ generates: false, transcribes: false, pooler: POOLER })).toEqual({
      routes: ['/tokenize', '/v1/embeddings', '/pooling', '/score', '/v1/score', '/rerank', '/v1/rerank', '/v2/rerank', '/invocations'],
      invocations: 'EmbeddingRequest, RerankRequest, ScoreRequest, PoolingRequest',
    });
  });

  it('a cross-encoder (one label) classifies and scores; a multi-label classifier only classifies', async () => {
    const crossEncoder = { ...POOLER, task: 'classify' as const };
    expect(await registered({ generates: false, transcribes: false, pooler: crossEncoder })).toEqual({
      routes: ['/tokenize', '/pooling', '/classify', '/score', '/v1/score', '/rerank', '/v1/rerank', '/v2/rerank', '/invocations'],
      invocations: 'ClassificationRequest, RerankRequest, ScoreRequest, PoolingRequest',
    });
    expect(await registered({ generates: false, transcribes: false, pooler: { ...crossEncoder, labels: ['a', 'b', 'c'] } })).toEqual({
      routes: ['/tokenize', '/pooling', '/classify', '/invocations'],
      invocations: 'ClassificationRequest, PoolingRequest',
    });
  });
});
