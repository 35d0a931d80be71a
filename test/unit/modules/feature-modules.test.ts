// Routes follow what the served model does (vLLM registers routers by the model's supported
// tasks): generation models get completions and chat, embedding models /v1/embeddings, /pooling,
// /score and /rerank, classifiers /classify and /pooling (+ /score and /rerank with one label),
// speech models /v1/audio/transcriptions and /v1/audio/translations.

import { createApp } from '../../../src/app-factory';
import { resolveServerConfig } from '../../../src/config/server-config';
import type { ServedModel } from '../../../src/modules/feature-modules';
import { FakeEngine } from '../../helpers/fake-engine';
import { poolerSettings } from '../../helpers/pooler-settings';

const POOLER = poolerSettings({ pooling: 'CLS', activation: 'sigmoid', labels: ['LABEL_0'] });

const ROUTES = ['/v1/completions', '/v1/chat/completions', '/v1/audio/transcriptions', '/v1/audio/translations', '/tokenize', '/v1/embeddings', '/pooling', '/classify', '/score', '/v1/score', '/rerank', '/v1/rerank', '/v2/rerank'];

/** Which of ROUTES answer something other than 404 for a POST with an empty body. */
async function registered(servedModel: ServedModel): Promise<string[]> {
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
    return found;
  } finally {
    await app.close();
  }
}

describe('routes by served model', () => {
  it('a speech model has the audio routes and tokenize, and no completions, chat or pooling', async () => {
    expect(await registered({ generates: false, transcribes: true, pooler: null })).toEqual(['/v1/audio/transcriptions', '/v1/audio/translations', '/tokenize']);
  });

  it('a generation model has no pooling routes', async () => {
    expect(await registered({ generates: true, transcribes: false, pooler: null })).toEqual(['/v1/completions', '/v1/chat/completions', '/tokenize']);
  });

  it('an embedding model has embeddings, pooling, score and rerank, and no completions or chat', async () => {
    expect(await registered({ generates: false, transcribes: false, pooler: POOLER })).toEqual(['/tokenize', '/v1/embeddings', '/pooling', '/score', '/v1/score', '/rerank', '/v1/rerank', '/v2/rerank']);
  });

  it('a cross-encoder (one label) classifies and scores; a multi-label classifier only classifies', async () => {
    const crossEncoder = { ...POOLER, task: 'classify' as const };
    expect(await registered({ generates: false, transcribes: false, pooler: crossEncoder })).toEqual(['/tokenize', '/pooling', '/classify', '/score', '/v1/score', '/rerank', '/v1/rerank', '/v2/rerank']);
    expect(await registered({ generates: false, transcribes: false, pooler: { ...crossEncoder, labels: ['a', 'b', 'c'] } })).toEqual(['/tokenize', '/pooling', '/classify']);
  });
});
