// Defaults of the image input limits (ortllm's own flags; vLLM leaves them to PIL) and the
// start-up check of --allowed-local-media-path.

import { statSync } from 'node:fs';

/** Largest encoded image a data URL, file or download may hold, in MiB. */
export const DEFAULT_MAX_IMAGE_FILESIZE_MB = 20;

/** PIL's Image.MAX_IMAGE_PIXELS: more than this is a decompression bomb. */
export const DEFAULT_MAX_IMAGE_PIXELS = 89_478_485;

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
