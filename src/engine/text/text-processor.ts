// TextProcessor implementations: InlineTextProcessor runs every job on the calling thread (tests
// with a scripted tokenizer, --tokenizer-pool-size 0); PooledTextProcessor runs small jobs inline
// and hands large ones to a few text workers (text-worker.ts), so one long prompt, a batch of
// thousands of prompts or a long decode never holds the HTTP thread for more than a few ms.

import type { Worker } from 'node:worker_threads';
import { ChatTemplateError } from '../../model/chat-template';
import type { ChatMessage, ChatRenderOptions, ChatTemplate, DecodeOptions, LoadModelOptions, Tokenizer } from '../../model/types';
import type { RenderedChat, TextProcessor } from '../types';
import { startWorkerThread } from '../worker/worker-thread';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { runTextJob, TextJobs, type TextJob, type TextWorkerReply } from './text-jobs';

export class InlineTextProcessor implements TextProcessor {
  protected readonly jobs: TextJobs;

  constructor(tokenizer: Tokenizer, template: ChatTemplate | null) {
    this.jobs = new TextJobs(tokenizer, template);
  }

  encode(texts: readonly string[], addSpecialTokens: boolean): Promise<number[][]> {
    return this.run({ op: 'encode', texts, addSpecialTokens }) as Promise<number[][]>;
  }

  decode(ids: readonly number[], opts?: DecodeOptions): Promise<string> {
    return this.run({ op: 'decode', ids, opts }) as Promise<string>;
  }

  renderChat(conversations: ChatMessage[][], opts: ChatRenderOptions, encode: { addSpecialTokens: boolean } | null): Promise<RenderedChat[]> {
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
      let total = 0;
      for (const messages of job.conversations) for (const m of messages) total += CHARS_PER_MESSAGE + contentLength(m);
      return total;
    }
  }
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** One text worker and the jobs it was given. */
class TextWorker {
  readonly pending = new Map<number, Pending>();
  private nextId = 0;
  alive = true;

  constructor(
    private readonly worker: Worker,
    private readonly onDeath: (worker: TextWorker, reason: string) => void,
  ) {
    worker.on('message', (reply: TextWorkerReply) => {
      if (reply.type !== 'done' && reply.type !== 'failed') return;
      const job = this.pending.get(reply.id);
      if (!job) return;
      this.pending.delete(reply.id);
      if (reply.type === 'done') job.resolve(reply.result);
      else job.reject(rebuildError(reply.name, reply.message));
    });
    worker.on('error', (err) => this.die(`text worker failed: ${err.message}`));
    worker.on('exit', (code) => this.die(`text worker exited (code ${code})`));
  }

  run(job: TextJob): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, job });
    });
  }

  terminate(): Promise<number> {
    this.alive = false;
    return this.worker.terminate();
  }

  private die(reason: string): void {
    if (!this.alive) return;
    this.alive = false;
    for (const job of this.pending.values()) job.reject(new Error(reason));
    this.pending.clear();
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
function rebuildError(name: string, message: string): Error {
  if (name === 'ChatTemplateError') return new ChatTemplateError(message);
  const err = new Error(message);
  err.name = name;
  return err;
}

export class PooledTextProcessor extends InlineTextProcessor {
  private workers: TextWorker[];
  /** Jobs handed to a worker so far (the rest ran inline). */
  offThreadJobs = 0;

  /** `workers` from spawnTextWorkers: each holds its own copy of the tokenizer and template. */
  constructor(tokenizer: Tokenizer, template: ChatTemplate | null, workers: Worker[]) {
    super(tokenizer, template);
    this.workers = workers.map((w) => new TextWorker(w, (dead, reason) => this.lose(dead, reason)));
  }

  async shutdown(): Promise<void> {
    const workers = this.workers;
    this.workers = [];
    await Promise.allSettled(workers.map((w) => w.terminate()));
  }

  protected override run(job: TextJob): Promise<unknown> {
    if (this.workers.length === 0 || jobCost(job) <= INLINE_BUDGET) return super.run(job);
    // The least busy worker; jobs queue in its message port.
    let best = this.workers[0];
    for (const w of this.workers) if (w.pending.size < best.pending.size) best = w;
    this.offThreadJobs++;
    return best.run(job).then((result) => unpack(result, job.op));
  }

  /** A worker that died: its jobs failed; later jobs go to the others, or inline when none is left. */
  private lose(worker: TextWorker, reason: string): void {
    this.workers = this.workers.filter((w) => w !== worker);
    console.error(`[engine] ${reason}; ${this.workers.length} text worker(s) left`);
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
