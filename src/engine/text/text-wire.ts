// A render job's conversations cross to a text worker as JSON text written a slice of messages at
// a time, with a turn of the event loop whenever a slice run passes a few milliseconds: posting a
// string is a copy, while structured clone of a million message objects holds the HTTP thread for
// most of a second. The worker parses the text back (runTextJob).

import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { ChatMessage } from '../../model/types';
import type { TextJob } from './text-jobs';

const MESSAGES_PER_SLICE = 1024;
const TURN_MS = 4;

async function conversationsJson(conversations: readonly ChatMessage[][]): Promise<string> {
  const parts: string[] = [];
  let runStart = performance.now();
  for (const messages of conversations) {
    const slices: string[] = [];
    for (let start = 0; start < messages.length; start += MESSAGES_PER_SLICE) {
      slices.push(JSON.stringify(messages.slice(start, start + MESSAGES_PER_SLICE)).slice(1, -1));
      if (performance.now() - runStart > TURN_MS) {
        await yieldToEventLoop();
        runStart = performance.now();
      }
    }
    parts.push(`[${slices.join(',')}]`);
  }
  return `[${parts.join(',')}]`;
}

/** The job as it is posted to a worker. */
export async function toWire(job: TextJob): Promise<TextJob> {
  if (job.op !== 'render' || typeof job.conversations === 'string') return job;
  return { ...job, conversations: await conversationsJson(job.conversations) };
}
