// data: URLs (RFC 2397) as vLLM's media connector reads them: base64 only, strict alphabet and
// padding (pybase64's validate=True). The media type, when given, must name an image.

import { RequestValidationError } from '../../engine/errors';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface DataUrlBytes {
  mediaType: string;
  bytes: Uint8Array;
}

/** The bytes of a base64 data URL; `maxBytes` bounds the decoded size before decoding. */
export function readDataUrl(url: string, maxBytes: number, param: string): DataUrlBytes {
  const comma = url.indexOf(',');
  if (comma < 0) throw new RequestValidationError(`Invalid data URL ${JSON.stringify(url.slice(0, 32))}: missing ',' separator.`, param);
  const spec = url.slice(5, comma);
  const semicolon = spec.lastIndexOf(';');
  if (semicolon < 0 || spec.slice(semicolon + 1) !== 'base64') {
    throw new RequestValidationError('Only base64 data URLs are supported for now.', param);
  }
  const mediaType = spec.slice(0, semicolon).split(';')[0].trim().toLowerCase();
  if (mediaType !== '' && !mediaType.startsWith('image/')) {
    throw new RequestValidationError(`The data URL's media type '${mediaType}' is not an image type.`, param);
  }
  const data = url.slice(comma + 1);
  if (data.length % 4 !== 0 || !BASE64.test(data)) throw new RequestValidationError('The data URL is not valid base64 (alphabet or padding).', param);
  const size = (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
  if (size > maxBytes) throw new RequestValidationError(`The image is ${size} bytes, more than the ${maxBytes} allowed (--max-image-filesize-mb).`, param);
  return { mediaType, bytes: Buffer.from(data, 'base64') };
}
