// The spellings of an image content part: chat's {"type": "image_url", "image_url": {"url",
// "detail"}} (or the URL as a plain string, as vLLM accepts) and the Responses API's
// {"type": "input_image", "image_url": "...", "detail"}. `detail` is OpenAI's resolution hint:
// vLLM ignores it (the model's processor decides the size), and so does this server.

import { RequestValidationError } from '../../engine/errors';
import { notSupportedYet } from '../unsupported';

const DETAILS = new Set(['auto', 'low', 'high']);

export function isImagePart(part: object): boolean {
  const type = (part as { type?: unknown }).type;
  return type === 'image_url' || type === 'input_image';
}

function checkDetail(detail: unknown, param: string): void {
  if (detail !== undefined && detail !== null && !(typeof detail === 'string' && DETAILS.has(detail))) {
    throw new RequestValidationError(`An image part's detail must be 'auto', 'low' or 'high'.`, param);
  }
}

/** The URL an image part names (data:, file:// or http(s)); throws 400 for a malformed part. */
export function imagePartUrl(part: object, param: string): string {
  const { type, image_url: imageUrl, detail, file_id: fileId } = part as Record<string, unknown>;
  if (type === 'input_image') {
    if (fileId != null) notSupportedYet(param, "An input_image's file_id (there is no Files API here)");
    checkDetail(detail, param);
    if (typeof imageUrl !== 'string' || imageUrl === '') throw new RequestValidationError("An input_image part needs a string 'image_url'.", param);
    return imageUrl;
  }
  if (typeof imageUrl === 'string' && imageUrl !== '') return imageUrl;
  const url = imageUrl && typeof imageUrl === 'object' ? (imageUrl as { url?: unknown }).url : undefined;
  if (typeof url !== 'string' || url === '') throw new RequestValidationError("An image_url part needs 'image_url': {\"url\": ...} or a URL string.", param);
  checkDetail((imageUrl as { detail?: unknown }).detail, param);
  return url;
}
