// The OpenAI Batch file format as vLLM's run-batch reads and writes it. Input lines:
// {"custom_id", "method": "POST", "url", "body"}. Output lines, in input order:
// {"id": "vllm-…", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}.
// A line that cannot run (malformed JSON, over the body limits, unknown url, stream) becomes an
// error record. Lines meet the limits of HTTP bodies before they are parsed.

import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { checkJsonShape, JsonShapeError, type JsonLimits } from '../../common/body/json-shape';
import { BATCH_ROUTES } from './batch-routes';

export interface BatchOutput {
  id: string;
  custom_id: string | null;
  response: { status_code: number; request_id: string; body: unknown };
  error: unknown;
}

const hex = (): string => randomUUID().replace(/-/g, '');

function record(customId: string | null, requestId: string, statusCode: number, body: unknown, error: unknown): BatchOutput {
  return { id: `vllm-${hex()}`, custom_id: customId, response: { status_code: statusCode, request_id: requestId, body }, error };
}

/** vLLM's error record for a line that never reached an endpoint: status 400, the message as `error`. */
function lineError(customId: string | null, message: string): BatchOutput {
  return record(customId, `vllm-batch-${hex()}`, 400, null, message);
}

/** The limits of an HTTP body (--max-request-body-size, --max-json-*), applied to a whole line. */
export interface LineLimits {
  maxBytes: number;
  /** The body's limits; the line's wrapper object adds one level of depth. */
  json: JsonLimits;
}

/** Null when the line is within the limits, else why not. */
function overLimits(line: string, limits: LineLimits): string | null {
  const bytes = Buffer.byteLength(line, 'utf8');
  if (bytes > limits.maxBytes) return `the line is ${bytes} bytes, more than ${limits.maxBytes} (--max-request-body-size)`;
  try {
    checkJsonShape(line, { ...limits.json, maxDepth: limits.json.maxDepth + 1 });
  } catch (err) {
    if (err instanceof JsonShapeError) return err.message;
    throw err;
  }
  return null;
}

/** Runs one input line (1-based `lineNo` for messages); never throws. */
export async function runBatchLine(app: FastifyInstance, line: string, lineNo: number, headers: Record<string, string>, limits: LineLimits): Promise<BatchOutput> {
  const refused = overLimits(line, limits);
  if (refused) return lineError(null, `line ${lineNo}: ${refused}`);
  let input: unknown;
  try {
    input = JSON.parse(line);
  } catch (err) {
    return lineError(null, `line ${lineNo}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return lineError(null, `line ${lineNo}: expected a JSON object`);
  const { custom_id: customId, method, url, body } = input as Record<string, unknown>;
  const id = typeof customId === 'string' ? customId : null;
  if (id === null) return lineError(null, `line ${lineNo}: custom_id must be a string`);
  if (method !== 'POST') return lineError(id, `line ${lineNo}: method must be "POST"`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return lineError(id, `line ${lineNo}: body must be a JSON object`);
  const handler = typeof url === 'string' ? BATCH_ROUTES[url] : undefined;
  if (!handler) return lineError(id, `URL ${String(url)} was used. Supported endpoints: ${Object.keys(BATCH_ROUTES).join(', ')}`);
  if ((body as Record<string, unknown>).stream === true) return lineError(id, 'Request must not be sent in stream mode');
  const requestId = `vllm-batch-${hex()}`;
  try {
    const reply = await handler(app, body as Record<string, unknown>, { ...headers, 'x-request-id': requestId });
    return reply.statusCode === 200 ? record(id, requestId, 200, reply.body, null) : record(id, requestId, reply.statusCode, null, reply.body);
  } catch (err) {
    return record(id, requestId, 500, null, `internal error: ${(err as Error).message}`);
  }
}
