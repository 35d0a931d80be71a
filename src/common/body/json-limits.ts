// The JSON shape limits of request bodies from the flags: the HTTP body parser and run-batch's
// input lines apply the same ones.

import type { ServerConfig } from '../../config/server-config';
import type { JsonLimits } from './json-shape';

export function jsonLimitsOf(config: ServerConfig): JsonLimits {
  return {
    maxDepth: config.maxJsonDepth,
    maxObjectKeys: config.maxJsonObjectKeys,
    maxArrayLength: config.maxJsonArrayLength,
    maxStringLength: config.maxJsonStringLength,
  };
}
