// An image URL -> its encoded bytes: data: URLs, file:// inside --allowed-local-media-path and
// http(s) from --allowed-media-domains (vLLM's MediaConnector.load_from_url).

import { RequestValidationError } from '../../engine/errors';
import { readDataUrl } from './data-url';
import { fetchMediaBytes } from './http-fetch';
import { readAllowedLocalFile } from './local-file';
import type { MediaOptions } from './media-options';

const UNKNOWN_SCHEME = 'The URL must be either a HTTP, data or file URL.';

export async function loadMediaBytes(url: string, opts: MediaOptions, param: string): Promise<Uint8Array> {
  if (url.slice(0, 5).toLowerCase() === 'data:') return readDataUrl(url, opts.maxImageBytes, param).bytes;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RequestValidationError(UNKNOWN_SCHEME, param);
  }
  if (parsed.protocol === 'http:' || parsed.protocol === 'https:') {
    const policy = { allowedDomains: opts.allowedMediaDomains, timeoutMs: opts.fetchTimeoutMs, allowRedirects: opts.allowRedirects, maxBytes: opts.maxImageBytes };
    return fetchMediaBytes(parsed, policy, param);
  }
  if (parsed.protocol === 'file:') return readAllowedLocalFile(parsed, opts.allowedLocalMediaPath, opts.maxImageBytes, param);
  throw new RequestValidationError(UNKNOWN_SCHEME, param);
}
