// The 404 text for an API path the served model lacks: vLLM's "The model does not support X API"
// when the model is the reason, a plain 404 when a flag (--tokens-only) turned the route off.

import { resolveServerConfig } from '../../../src/config/server-config';
import { GENERATION_MODEL, type ServedModel } from '../../../src/modules/feature-modules';
import { missingApiMessage } from '../../../src/modules/missing-apis';
import { poolerSettings } from '../../helpers/pooler-settings';

const config = (extra: Record<string, unknown> = {}) => resolveServerConfig({ model: '/models/tiny', ...extra }, {});
const EMBEDDER: ServedModel = { generates: false, transcribes: false, pooler: poolerSettings({ task: 'embed' }) };
const SPEECH: ServedModel = { generates: false, transcribes: true, pooler: null };

describe('missingApiMessage', () => {
  it('names the API of a path the model cannot serve, under every path of that API', () => {
    const forEmbedder = missingApiMessage(config(), EMBEDDER);
    expect(forEmbedder('/v1/chat/completions')).toBe('The model does not support Chat Completions API');
    expect(forEmbedder('/v1/responses/resp_1/cancel')).toBe('The model does not support Responses API');
    expect(forEmbedder('/v1/audio/translations')).toBe('The model does not support Translations API');
    expect(forEmbedder('/classify')).toBe('The model does not support Classification API');
    expect(missingApiMessage(config(), GENERATION_MODEL)('/v2/rerank')).toBe('The model does not support Rerank API');
    expect(missingApiMessage(config(), SPEECH)('/v1/embeddings')).toBe('The model does not support Embeddings API');
  });

  it('says nothing of paths that are no API, or that the model has but a flag turned off', () => {
    expect(missingApiMessage(config(), EMBEDDER)('/v1/chat/completionsx')).toBeNull();
    expect(missingApiMessage(config(), EMBEDDER)('/v1/nothing')).toBeNull();
    expect(missingApiMessage(config({ tokensOnly: true }), GENERATION_MODEL)('/v1/chat/completions')).toBeNull();
    expect(missingApiMessage(config({ tokensOnly: true }), SPEECH)('/v1/audio/transcriptions')).toBeNull();
  });
});
