// Global exception filter: every error leaving a Nest handler becomes vLLM's error envelope.
// Errors after an SSE stream has started are handled by the SSE helpers, not here.

import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { UNAUTHORIZED_BODY, UnauthorizedKeyError } from './api-key.guard';
import { mapError } from './error-mapping';

@Catch()
export class OpenAIExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('OpenAIExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (exception instanceof UnauthorizedKeyError) {
      void reply.status(401).send(UNAUTHORIZED_BODY);
      return;
    }
    const { status, body } = mapError(exception);
    if (reply.sent || reply.raw.headersSent) {
      this.logger.warn(`error after the response started: ${body.error.message}`);
      if (!reply.raw.writableEnded) reply.raw.end();
      return;
    }
    void reply.status(status).header('content-type', 'application/json').send(body);
  }
}
