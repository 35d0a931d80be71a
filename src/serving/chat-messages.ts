// Checks chat messages for the template: string or content parts. Image parts become an
// `{"type": "image"}` placeholder part and go to a MediaPartSink (the prompt's MultiModalItems);
// without one, and for audio/video/file parts, they are refused. Text parts stay a list, so a
// template that iterates them (--chat-template-content-format openai) sees them one by one.

import { RequestValidationError } from '../engine/errors';
import type { ChatMessage } from '../model/types';
import { imagePartUrl, isImagePart } from './media/image-parts';
import type { MediaPartSink } from './media/multimodal-items';
import { notSupportedYet } from './unsupported';
import { mapTakingTurns } from './yield-budget';

const MEDIA_PART_TYPES = new Set([
  'image_url', 'image', 'image_embeds', 'image_pil', 'input_image',
  'input_audio', 'audio_url', 'audio', 'audio_embeds',
  'video_url', 'video', 'file', 'input_file',
]);

type TextPart = { type: 'text'; text: string };
/** Where an image stood in the message: the chat template renders the model's image token for it. */
type ImagePlaceholder = { type: 'image' };

function checkContent(content: unknown, param: string, media?: MediaPartSink): string | null | Array<TextPart | ImagePlaceholder> {
  if (content === null || content === undefined) return null;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new RequestValidationError('message content must be a string or an array of content parts.', param);
  const parts: Array<TextPart | ImagePlaceholder> = [];
  for (const part of content) {
    if (typeof part === 'string') {
      parts.push({ type: 'text', text: part });
      continue;
    }
    if (!part || typeof part !== 'object') throw new RequestValidationError('content parts must be objects.', param);
    const type = (part as { type?: unknown }).type;
    if (type === 'text' || type === 'input_text' || type === 'output_text' || type === 'refusal') {
      const text = (part as { text?: unknown; refusal?: unknown }).text ?? (part as { refusal?: unknown }).refusal;
      if (typeof text !== 'string') throw new RequestValidationError(`a '${String(type)}' content part needs a string 'text'.`, param);
      parts.push({ type: 'text', text });
    } else if (media && isImagePart(part as object)) {
      media.addImage(imagePartUrl(part as object, param), param);
      parts.push({ type: 'image' });
    } else if (typeof type === 'string' && MEDIA_PART_TYPES.has(type)) {
      notSupportedYet(param, `Content parts of type '${type}' (multimodal input)`);
    } else {
      throw new RequestValidationError(`Unknown content part type: ${String(type)}.`, param);
    }
  }
  return parts;
}

/** The text of a message's content (text parts joined with newlines, as vLLM's "string" format does). */
export function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((part) => part.text ?? '').join('\n');
}

function checkMessage(raw: unknown, i: number, param: string, media?: MediaPartSink): ChatMessage {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new RequestValidationError(`messages[${i}] must be an object.`, param);
  }
  const message = raw as Record<string, unknown>;
  if (typeof message.role !== 'string' || message.role === '') {
    throw new RequestValidationError(`messages[${i}].role must be a non-empty string.`, param);
  }
  return { ...message, role: message.role, content: checkContent(message.content, param, media) };
}

function requireMessageList(messages: unknown, param: string): unknown[] {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new RequestValidationError('messages must be a non-empty array.', param);
  }
  return messages;
}

/** Validates one conversation and returns template-ready messages (content: string, null or text parts). */
export function prepareChatMessages(messages: unknown, param = 'messages'): ChatMessage[] {
  return requireMessageList(messages, param).map((raw, i) => checkMessage(raw, i, param));
}

/**
 * prepareChatMessages for a conversation that may hold a million messages: takes turns with the
 * event loop. With `media`, image parts are accepted and reported to it, in order.
 */
export function prepareChatMessagesTakingTurns(messages: unknown, param = 'messages', media?: MediaPartSink): Promise<ChatMessage[]> {
  return mapTakingTurns(requireMessageList(messages, param), (raw, i) => checkMessage(raw, i, param, media));
}
