// Global exception filter: every error leaving a Nest handler (or a body parser, through Nest's
// Fastify error handler) becomes vLLM's error envelope. Errors after an SSE stream has started
// are handled by the SSE helpers, not here.

import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { mapError } from './error-mapping';
import { closeAfterAnswer } from './lingering-close';

/** Answers after which the connection closes (lingering): the client may still be sending a body nobody reads. */
const CLOSING_STATUSES = new Set([408, 413]);

@Catch()
export class OpenAIExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('OpenAIExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const { status, body, headers } = mapError(exception);
    if (reply.sent || reply.raw.headersSent) {
      this.logger.warn(`error after the response started: ${body.error.message}`);
      if (!reply.raw.writableEnded) reply.raw.end();
      return;
    }
    if (headers) void reply.headers(headers);
    if (CLOSING_STATUSES.has(status)) closeAfterAnswer(reply);
    void reply.status(status).header('content-type', 'application/json').send(body);
  }
}
