// file:// media URLs, only inside --allowed-local-media-path: the path is resolved with its
// symlinks before the check, so neither `..` nor a link can lead out of the directory.

import { open, realpath } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { RequestValidationError } from '../../engine/errors';

/** The real path of a file the URL names, or the lexical one when it does not exist (checked the same way). */
async function resolvedPath(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return resolve(path);
  }
}

/** Reads the file a file:// URL names; `allowedDir` is the real path of --allowed-local-media-path (null: none given). */
export async function readAllowedLocalFile(url: URL, allowedDir: string | null, maxBytes: number, param: string): Promise<Uint8Array> {
  if (allowedDir === null) throw new RequestValidationError('Cannot load local files without `--allowed-local-media-path`.', param);
  const filePath = decodeURIComponent(url.host + url.pathname);
  const real = await resolvedPath(filePath);
  if (!real.startsWith(allowedDir + sep)) {
    throw new RequestValidationError(`The file path ${filePath} must be a subpath of \`--allowed-local-media-path ${allowedDir}\`.`, param);
  }
  let handle;
  try {
    handle = await open(real, 'r');
  } catch {
    throw new RequestValidationError(`The file path ${filePath} does not exist or cannot be read.`, param);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new RequestValidationError(`The file path ${filePath} is not a regular file.`, param);
    const size = stat.size;
    if (size > maxBytes) {
      throw new RequestValidationError(`The image is ${size} bytes, more than the ${maxBytes} allowed (--max-image-filesize-mb).`, param);
    }
    return new Uint8Array(await handle.readFile());
  } finally {
    await handle.close();
  }
}
