// Checks the `model` field of a request against --served-model-name (vLLM's _check_model):
// omitted -> the first served name; a listed name -> accepted; anything else -> 404.

import type { ServerConfig } from '../config/server-config';
import { OpenAIHttpError } from './openai-error';

/** Returns the name to report in the response's `model`; throws 404 NotFoundError for an unknown model. */
export function resolveServedModel(config: ServerConfig, requested: string | null | undefined): string {
  if (requested === undefined || requested === null || requested === '') return config.servedModelNames[0];
  if (config.servedModelNames.includes(requested)) return config.servedModelNames[0];
  throw OpenAIHttpError.modelNotFound(requested);
}
