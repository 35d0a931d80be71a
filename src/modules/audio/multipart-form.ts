// Reads a speech-to-text request: a multipart/form-data body (parsed by @fastify/multipart) with
// one `file` part and text fields, converted and validated against the route's DTO with the same
// rules and error envelope as JSON bodies (undeclared fields logged or refused as
// --unknown-request-fields says). Every failure is a 400 naming the field.

import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validate } from 'class-validator';
import type {} from '@fastify/multipart'; // its FastifyRequest.parts() / isMultipart() typings
import type { FastifyRequest } from 'fastify';
import { OpenAIHttpError } from '../../serving/openai-error';
import { UnknownFieldsPipe } from '../../common/unknown-fields';
import { validationExceptionFactory } from '../../common/validation';
import type { UnknownFieldsAction } from '../../config/server-config';

export interface MultipartForm<T> {
  fields: T;
  /** The `file` part's bytes, or null when the form has none. */
  file: Buffer | null;
}

export interface MultipartLimits {
  maxFileMb: number;
  unknownFields: UnknownFieldsAction;
}

export async function readMultipartForm<T extends object>(request: FastifyRequest, dto: ClassConstructor<T>, limits: MultipartLimits): Promise<MultipartForm<T>> {
  const { maxFileMb } = limits;
  if (!request.isMultipart()) {
    throw OpenAIHttpError.badRequest('The request must be multipart/form-data with the audio in a `file` field.', 'file');
  }
  const raw: Record<string, string | string[]> = {};
  let file: Buffer | null = null;
  try {
    for await (const part of request.parts({ limits: { fileSize: Math.floor(maxFileMb * 2 ** 20), files: 1 } })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          await part.toBuffer().catch(() => undefined);
          throw OpenAIHttpError.badRequest(`Unexpected file field '${part.fieldname}': the audio goes in \`file\`.`, part.fieldname);
        }
        file = await part.toBuffer();
      } else {
        const value = String(part.value);
        const previous = raw[part.fieldname];
        raw[part.fieldname] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
      }
    }
  } catch (err) {
    throw multipartError(err, maxFileMb);
  }
  new UnknownFieldsPipe(limits.unknownFields).transform(raw, { type: 'body', metatype: dto });
  const fields = plainToInstance(dto, raw);
  const errors = await validate(fields, { forbidUnknownValues: false });
  if (errors.length > 0) throw validationExceptionFactory(errors);
  return { fields, file };
}

/** @fastify/multipart's errors (413/406 by default) as vLLM answers them: 400. */
function multipartError(err: unknown, maxFileMb: number): unknown {
  if (err instanceof OpenAIHttpError) return err;
  const code = (err as { code?: string }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return OpenAIHttpError.badRequest(`Maximum file size exceeded (${maxFileMb} MB).`, 'audio_filesize_mb');
  if (code === 'FST_FILES_LIMIT') return OpenAIHttpError.badRequest('Send one audio file per request.', 'file');
  if (typeof code === 'string' && code.startsWith('FST_')) return OpenAIHttpError.badRequest(`Malformed multipart body: ${(err as Error).message}`, 'file');
  // busboy's parse errors (a truncated or malformed body) carry no code.
  if (err instanceof Error && /multipart|boundary|unexpected end/i.test(err.message)) {
    return OpenAIHttpError.badRequest(`Malformed multipart body: ${err.message}`, 'file');
  }
  return err;
}
