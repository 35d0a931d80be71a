// Tool call ids as vLLM makes them: `chatcmpl-tool-` + a uuid4 hex.

import { randomUUID } from 'node:crypto';

export function makeToolCallId(): string {
  return `chatcmpl-tool-${randomUUID().replace(/-/g, '')}`;
}
