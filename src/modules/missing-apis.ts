// Which API a path belongs to, for the 404 a path gets when the served model lacks that API (an
// embedding model has no /v1/chat/completions): vLLM's "The model does not support X API" says
// what to change, where a bare "Not Found" does not. Paths a flag turned off stay plain 404s.

import type { ServerConfig } from '../config/server-config';
import {
  audioRoutes, classifyRoutes, embeddingRoutes, openAiRoutes, poolingRoutes, scoreRoutes, type RoutePredicate, type ServedModel,
} from './served-routes';

interface ApiPaths {
  /** vLLM's name for the API, as in "The model does not support Chat Completions API". */
  api: string;
  /** Exact paths; a path ending in '/' also covers everything under it. */
  paths: string[];
  served: RoutePredicate;
}

const API_PATHS: ApiPaths[] = [
  { api: 'Chat Completions', paths: ['/v1/chat/completions', '/v1/chat/completions/'], served: openAiRoutes },
  { api: 'Completions', paths: ['/v1/completions', '/v1/completions/'], served: openAiRoutes },
  { api: 'Responses', paths: ['/v1/responses', '/v1/responses/'], served: openAiRoutes },
  { api: 'Transcriptions', paths: ['/v1/audio/transcriptions'], served: audioRoutes },
  { api: 'Translations', paths: ['/v1/audio/translations'], served: audioRoutes },
  { api: 'Embeddings', paths: ['/v1/embeddings'], served: embeddingRoutes },
  { api: 'Pooling', paths: ['/pooling'], served: poolingRoutes },
  { api: 'Classification', paths: ['/classify'], served: classifyRoutes },
  { api: 'Score', paths: ['/score', '/v1/score'], served: scoreRoutes },
  { api: 'Rerank', paths: ['/rerank', '/v1/rerank', '/v2/rerank'], served: scoreRoutes },
];

function covers(entry: ApiPaths, path: string): boolean {
  return entry.paths.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p));
}

/**
 * The message for a request to `path` that no route serves, when the reason is the model (the
 * route would be missing whatever the flags); null otherwise.
 */
export function missingApiMessage(config: ServerConfig, model: ServedModel): (path: string) => string | null {
  const flagsAllowingAll: ServerConfig = { ...config, tokensOnly: false };
  const lacking = API_PATHS.filter((entry) => !entry.served(flagsAllowingAll, model));
  return (path) => {
    const entry = lacking.find((e) => covers(e, path));
    return entry ? `The model does not support ${entry.api} API` : null;
  };
}
