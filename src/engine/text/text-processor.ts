// TextProcessor implementations: InlineTextProcessor runs every job on the calling thread (tests
// with a scripted tokenizer, --tokenizer-pool-size 0); PooledTextProcessor runs small jobs inline
// and hands large ones to a few text workers (text-worker.ts), so one long prompt, a batch of
// thousands of prompts or a long decode never holds the HTTP thread for more than a few ms. The
// workers share one queue, smallest job first with aging, and huge jobs never occupy every
// worker: a normal prompt does not wait behind a few 8 MiB ones.

import type { Worker } from 'node:worker_threads';
import { ChatTemplateError } from '../../model/chat-template';
import { PromptTooLongError } from '../errors';
import type { ChatMessage, ChatRenderOptions, ChatTemplate, DecodeOptions, LoadModelOptions, Tokenizer } from '../../model/types';
import type { RenderedChat, TextProcessor } from '../types';
import { startWorkerThread } from '../worker/worker-thread';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { runTextJob, TextJobs, type EncodeOptions, type TextJob, type TextWorkerReply } from './text-jobs';
import { toWire } from './text-wire';

export class InlineTextProcessor implements TextProcessor {
  protected readonly jobs: TextJobs;

  constructor(tokenizer: Tokenizer, template: ChatTemplate | null) {
    this.jobs = new TextJobs(tokenizer, template);
  }

  encode(texts: readonly string[], addSpecialTokens: boolean, tokenLimit?: number | null): Promise<number[][]> {
    return this.run({ op: 'encode', texts, addSpecialTokens, tokenLimit }) as Promise<number[][]>;
  }

  decode(ids: readonly number[], opts?: DecodeOptions): Promise<string> {
    return this.run({ op: 'decode', ids, opts }) as Promise<string>;
  }

  renderChat(conversations: ChatMessage[][], opts: ChatRenderOptions, encode: EncodeOptions | null): Promise<RenderedChat[]> {
    return this.run({ op: 'render', conversations, opts, encode }) as Promise<RenderedChat[]>;
  }

  protected run(job: TextJob): Promise<unknown> {
    try {
      return Promise.resolve(runTextJob(this.jobs, job));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }
}

/**
 * Work a job stands for, in characters of text (tokens count as a few characters, messages as
 * their content plus template overhead). At ~0.6 µs per character of tokenization on a slow core,
 * INLINE_BUDGET keeps an inline job to a few milliseconds.
 */
const INLINE_BUDGET = 4096;
const CHARS_PER_TOKEN = 4;
const CHARS_PER_MESSAGE = 64;

function contentLength(message: ChatMessage): number {
  const content = message.content;
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content) total += typeof part.text === 'string' ? part.text.length : CHARS_PER_MESSAGE;
  return total;
}

function jobCost(job: TextJob): number {
  switch (job.op) {
    case 'encode':
      return job.texts.reduce((sum, text) => sum + text.length, 0);
    case 'decode':
      return job.ids.length * CHARS_PER_TOKEN;
    case 'render': {
      if (typeof job.conversations === 'string') return job.conversations.length;
      // Enough messages are over the budget whatever they hold; a million are not walked here.
      const messages = job.conversations.reduce((sum, c) => sum + c.length, 0);
      if (messages * CHARS_PER_MESSAGE > INLINE_BUDGET) return messages * CHARS_PER_MESSAGE;
      let total = 0;
      for (const messages of job.conversations) for (const m of messages) total += CHARS_PER_MESSAGE + contentLength(m);
      return total;
    }
  }
}

interface QueuedJob {
  job: TextJob;
  cost: number;
  queuedAt: number;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** One text worker; it is given one job at a time, so the pool decides what runs next. */
class TextWorker {
  current: QueuedJob | null = null;
  alive = true;

  constructor(
    private readonly worker: Worker,
    private readonly onIdle: (worker: TextWorker) => void,
    private readonly onDeath: (worker: TextWorker, reason: string) => void,
  ) {
    worker.on('message', (reply: TextWorkerReply) => {
      if (reply.type !== 'done' && reply.type !== 'failed') return;
      const job = this.current;
      if (!job) return;
      this.current = null;
      if (reply.type === 'done') job.resolve(reply.result);
      else job.reject(rebuildError(reply.name, reply.message, reply.atLeast));
      this.onIdle(this);
    });
    worker.on('error', (err) => this.die(`text worker failed: ${err.message}`));
    worker.on('exit', (code) => this.die(`text worker exited (code ${code})`));
  }

  start(job: QueuedJob): void {
    this.current = job;
    this.worker.postMessage({ id: 0, job: job.job });
  }

  terminate(): Promise<number> {
    this.alive = false;
    return this.worker.terminate();
  }

  private die(reason: string): void {
    if (!this.alive) return;
    this.alive = false;
    this.current?.reject(new Error(reason));
    this.current = null;
    this.onDeath(this, reason);
  }
}

/** Ids converted per event-loop turn: a few milliseconds on a slow core. */
const IDS_PER_TURN = 65_536;

/** An Int32Array of token ids as number[], converted in slices with yields between them. */
async function toIdList(typed: Int32Array): Promise<number[]> {
  const ids = new Array<number>(typed.length);
  for (let start = 0; start < typed.length; start += IDS_PER_TURN) {
    if (start > 0) await yieldToEventLoop();
    const end = Math.min(typed.length, start + IDS_PER_TURN);
    for (let i = start; i < end; i++) ids[i] = typed[i];
  }
  return ids;
}

/** Turns a worker's packed result (text-jobs.ts packTokenIds) back into the TextProcessor shapes. */
async function unpack(result: unknown, op: TextJob['op']): Promise<unknown> {
  if (op === 'encode') {
    const lists: number[][] = [];
    for (const typed of result as Int32Array[]) lists.push(await toIdList(typed));
    return lists;
  }
  if (op === 'render') {
    const rendered: RenderedChat[] = [];
    for (const r of result as Array<{ text: string; tokenIds: Int32Array | null }>) {
      rendered.push({ text: r.text, tokenIds: r.tokenIds ? await toIdList(r.tokenIds) : null });
    }
    return rendered;
  }
  return result;
}

/** Errors keep their class across the thread boundary where callers tell them apart. */
function rebuildError(name: string, message: string, atLeast: number | undefined): Error {
  if (name === 'ChatTemplateError') return new ChatTemplateError(message);
  if (name === 'PromptTooLongError' && atLeast !== undefined) return new PromptTooLongError(atLeast);
  const err = new Error(message);
  err.name = name;
  return err;
}

/**
 * Jobs above this cost (characters; ~150 ms of tokenizing) are huge: with two or more workers they
 * never take the last idle one, which stays for the rest.
 */
const HUGE_JOB_COST = 256 * 1024;
/** Aging: each millisecond in the queue counts as this many characters less of cost. */
const AGING_CHARS_PER_MS = 1000;

export class PooledTextProcessor extends InlineTextProcessor {
  private workers: TextWorker[];
  private readonly queue: QueuedJob[] = [];
  /** Jobs handed to a worker so far (the rest ran inline). */
  offThreadJobs = 0;

  /** `workers` from spawnTextWorkers: each holds its own copy of the tokenizer and template. */
  constructor(tokenizer: Tokenizer, template: ChatTemplate | null, workers: Worker[]) {
    super(tokenizer, template);
    this.workers = workers.map((w) => new TextWorker(w, () => this.dispatch(), (dead, reason) => this.lose(dead, reason)));
  }

  async shutdown(): Promise<void> {
    const workers = this.workers;
    this.workers = [];
    await Promise.allSettled(workers.map((w) => w.terminate()));
  }

  protected override run(job: TextJob): Promise<unknown> {
    const cost = jobCost(job);
    if (this.workers.length === 0 || cost <= INLINE_BUDGET) return super.run(job);
    this.offThreadJobs++;
    return toWire(job)
      .then((wire) => new Promise((resolve, reject) => {
        this.queue.push({ job: wire, cost, queuedAt: performance.now(), resolve, reject });
        this.dispatch();
      }))
      .then((result) => unpack(result, job.op));
  }

  /** Starts queued jobs on idle workers: the cheapest (after aging) first, huge ones never on the last idle worker. */
  private dispatch(): void {
    for (;;) {
      const idle = this.workers.filter((w) => w.current === null);
      if (idle.length === 0 || this.queue.length === 0) return;
      const hugeAllowed = this.workers.length === 1 || idle.length > 1;
      const now = performance.now();
      let best = -1;
      let bestScore = Infinity;
      for (const [i, queued] of this.queue.entries()) {
        const score = queued.cost - (now - queued.queuedAt) * AGING_CHARS_PER_MS;
        // A huge job that has waited long enough (score down to 0) may take the last worker too.
        if (queued.cost > HUGE_JOB_COST && !hugeAllowed && score > 0) continue;
        if (score < bestScore) [best, bestScore] = [i, score];
      }
      if (best < 0) return;
      const [next] = this.queue.splice(best, 1);
      idle[0].start(next);
    }
  }

  /** A worker that died: its job failed; queued jobs go to the others, or run inline when none is left. */
  private lose(worker: TextWorker, reason: string): void {
    this.workers = this.workers.filter((w) => w !== worker);
    console.error(`[engine] ${reason}; ${this.workers.length} text worker(s) left`);
    if (this.workers.length > 0) return this.dispatch();
    for (const queued of this.queue.splice(0)) super.run(queued.job).then(queued.resolve, queued.reject);
  }
}

/** Starts `size` text workers; resolves once all have loaded the tokenizer (none left running on failure). */
export async function spawnTextWorkers(load: LoadModelOptions, size: number): Promise<Worker[]> {
  const started = await Promise.allSettled(Array.from({ length: size }, () => spawnTextWorker(load)));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  const workers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (!failed) return workers;
  await Promise.allSettled(workers.map((w) => w.terminate()));
  throw failed.reason;
}

function spawnTextWorker(load: LoadModelOptions): Promise<Worker> {
  const worker = startWorkerThread(__dirname, 'text-worker', { load });
  return new Promise((resolve, reject) => {
    const onMessage = (message: TextWorkerReply): void => {
      if (message.type === 'ready') {
        cleanup();
        resolve(worker);
      } else if (message.type === 'startup-error') {
        cleanup();
        void worker.terminate();
        reject(new Error(`text worker failed to start: ${message.error}`));
      }
    };
    const onExit = (code: number): void => {
      cleanup();
      reject(new Error(`text worker exited during start-up (code ${code})`));
    };
    const cleanup = (): void => {
      worker.off('message', onMessage);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.on('exit', onExit);
  });
}
