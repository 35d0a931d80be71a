// Builds the engine core over a loaded model and drives its step loop: EngineCore (runner, KV
// budget, sampling) for generation models, PoolingCore (no KV) for pooling models. The same host
// runs inside the engine worker thread and in-process (useWorker=false).

import * as os from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createRunner, kvBytesPerBlock } from '../../model/runner';
import { createPoolingRunner } from '../../model/runner/pooling-runner';
import type { LoadedModel } from '../../model/types';
import { wrongRunnerError } from '../errors';
import type { EncodeRequest, EngineOptions, EngineRequest } from '../types';
import type { CoreEvent, CoreInfo } from './protocol';
import { CompletionProcessorFactory } from './completion-processor';
import { EngineCore } from './engine-core';
import { PoolingCore } from './pooling-core';

/** Share of free memory the KV cache takes when --kv-cache-memory is not given. */
const AUTO_KV_MEMORY_FRACTION = 0.2;

interface KvPlan {
  numBlocks: number;
  maxModelLen: number;
  bytesPerBlock: number;
}

/**
 * Decides the number of KV blocks and the effective max_model_len. An explicit budget
 * that cannot hold one max_model_len sequence is a start-up error (as in vLLM); a derived
 * max_model_len is lowered to what the cache holds instead.
 */
function planKvCache(model: LoadedModel, options: EngineOptions, freeMemoryBytes = os.freemem()): KvPlan {
  const blockSize = options.blockSize;
  const bytesPerBlock = kvBytesPerBlock(model.config, blockSize);
  let maxModelLen = options.maxModelLen ?? model.contextLength;
  if (options.maxModelLen !== null && options.maxModelLen > model.contextLength) {
    throw new Error(
      `max_model_len ${options.maxModelLen} is larger than the model's context length ${model.contextLength}.`,
    );
  }
  let numBlocks: number;
  if (options.kvCacheMemoryBytes !== null) {
    numBlocks = Math.floor(options.kvCacheMemoryBytes / bytesPerBlock);
  } else {
    // More blocks than a full batch of max-length sequences would never be used.
    const useful = options.maxNumSeqs * Math.ceil(maxModelLen / blockSize);
    numBlocks = Math.min(useful, Math.floor((freeMemoryBytes * AUTO_KV_MEMORY_FRACTION) / bytesPerBlock));
  }
  if (numBlocks < 1) {
    throw new Error(`KV cache budget is smaller than one block (${bytesPerBlock} bytes); raise --kv-cache-memory.`);
  }
  const capacity = numBlocks * blockSize;
  if (capacity < maxModelLen) {
    if (options.maxModelLen !== null) {
      throw new Error(
        `To serve at least one request with max_model_len ${maxModelLen}, the KV cache needs ${Math.ceil(maxModelLen / blockSize) * bytesPerBlock} bytes, ` +
          `but only ${numBlocks * bytesPerBlock} bytes (${capacity} tokens) are available. ` +
          'Raise --kv-cache-memory or lower --max-model-len.',
      );
    }
    maxModelLen = capacity;
  }
  return { numBlocks, maxModelLen, bytesPerBlock };
}

/**
 * ORT's default pool takes every core and spins, starving the HTTP thread: on 2 cores,
 * bench/engine-lag measured 2-4x more steps/s and a lower event-loop lag p99 with one
 * thread than with ORT's default.
 */
export function defaultIntraOpThreads(): number {
  return Math.max(1, os.availableParallelism() - 1);
}

/**
 * A pooling model's steps are few and large (whole prompts, packed), and the HTTP thread's share
 * per request is small, so its forward gets every core: on the 2-core box, a 16 x 128-token MiniLM
 * forward took 138 ms with two threads against 305 ms with one (best of 3, load permitting).
 * Idle threads sleep (allow_spinning 0), so the HTTP thread gets the cores between steps.
 */
export function poolingIntraOpThreads(): number {
  return os.availableParallelism();
}

/** The step loop's view of a core, generation or pooling. */
interface SteppingCore {
  hasWork(): boolean;
  step(): Promise<void>;
  abort(requestIds: readonly string[]): void;
}

/** The core and what to do with each kind of request (the other kind is refused). */
interface HostedCore {
  core: SteppingCore;
  add(request: EngineRequest): void;
  encode(request: EncodeRequest): void;
  dispose(): Promise<void>;
}

export class EngineCoreHost {
  private stopped = false;
  private wake: (() => void) | null = null;
  private readonly loop: Promise<void>;

  private constructor(
    readonly info: CoreInfo,
    private readonly hosted: HostedCore,
    private readonly emit: (event: CoreEvent) => void,
  ) {
    this.loop = this.run();
  }

  /** Creates the runner and starts the step loop; events go to `emit`. */
  static async start(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void): Promise<EngineCoreHost> {
    return model.output.kind === 'logits' ? EngineCoreHost.startGeneration(model, options, emit) : EngineCoreHost.startPooling(model, options, emit);
  }

  private static async startGeneration(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void): Promise<EngineCoreHost> {
    const plan = planKvCache(model, options);
    const runner = await createRunner(model, {
      blockSize: options.blockSize,
      numBlocks: plan.numBlocks,
      device: options.device,
      intraOpThreads: options.intraOpThreads ?? defaultIntraOpThreads(),
    });
    console.info(
      `[engine] KV cache: ${plan.numBlocks} blocks of ${options.blockSize} tokens ` +
        `(${((plan.numBlocks * plan.bytesPerBlock) / 2 ** 20).toFixed(1)} MiB), max_model_len ${plan.maxModelLen}`,
    );
    const config = {
      maxModelLen: plan.maxModelLen,
      maxNumSeqs: options.maxNumSeqs,
      maxNumBatchedTokens: options.maxNumBatchedTokens,
      schedulingPolicy: options.schedulingPolicy,
      enablePrefixCaching: options.enablePrefixCaching,
    };
    const processors = new CompletionProcessorFactory({
      vocabSize: model.config.vocabSize,
      eosTokenIds: model.eosTokenIds,
      maxModelLen: plan.maxModelLen,
      tokenizer: model.tokenizer,
    });
    const core = new EngineCore(runner, config, processors, {
      onStep: (outputs, stats, iteration) => emit({ type: 'step', outputs, stats, iteration }),
    });
    const info: CoreInfo = { numBlocks: plan.numBlocks, blockSize: options.blockSize, maxModelLen: plan.maxModelLen };
    return new EngineCoreHost(
      info,
      { core, add: (r) => core.addRequest(r), encode: () => refuse('encode'), dispose: () => runner.dispose() },
      emit,
    );
  }

  /** No KV cache: max_model_len is the model's (or the flag's), and one step holds at least one whole sequence. */
  private static async startPooling(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void): Promise<EngineCoreHost> {
    const maxModelLen = options.maxModelLen ?? model.contextLength;
    if (maxModelLen > model.contextLength) {
      throw new Error(`max_model_len ${maxModelLen} is larger than the model's context length ${model.contextLength}.`);
    }
    const runner = await createPoolingRunner(model, { device: options.device, intraOpThreads: options.intraOpThreads ?? poolingIntraOpThreads() });
    const budget = Math.max(options.maxNumBatchedTokens, maxModelLen);
    console.info(`[engine] pooling model: no KV cache, max_model_len ${maxModelLen}, ${budget} tokens per step`);
    const core = new PoolingCore(
      runner,
      { maxModelLen, maxNumSeqs: options.maxNumSeqs, maxNumBatchedTokens: budget, schedulingPolicy: options.schedulingPolicy, vocabSize: model.config.vocabSize, blockSize: options.blockSize },
      { onStep: (pooled, stats, iteration) => emit({ type: 'step', outputs: [], pooled, stats, iteration }) },
    );
    const info: CoreInfo = { numBlocks: 0, blockSize: options.blockSize, maxModelLen };
    return new EngineCoreHost(
      info,
      { core, add: () => refuse('generate'), encode: (r) => core.addRequest(r), dispose: () => runner.dispose() },
      emit,
    );
  }

  add(request: EngineRequest): void {
    this.accept(request.requestId, () => this.hosted.add(request));
  }

  encode(request: EncodeRequest): void {
    this.accept(request.requestId, () => this.hosted.encode(request));
  }

  abort(requestIds: string[]): void {
    this.hosted.core.abort(requestIds);
    this.wake?.();
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await this.hosted.dispose();
  }

  /** Queues a request, or tells the frontend why not (RequestValidationError there). */
  private accept(requestId: string, queue: () => void): void {
    try {
      queue();
    } catch (err) {
      const e = err as Error & { param?: string | null };
      this.emit({ type: 'rejected', requestId, message: e.message, param: e.param ?? null, name: e.name });
      return;
    }
    this.wake?.();
  }

  private async run(): Promise<void> {
    const core = this.hosted.core;
    try {
      while (!this.stopped) {
        if (!core.hasWork()) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          this.wake = null;
          continue;
        }
        await core.step();
        // Lets add/abort messages in between steps even when a step did no async work.
        await yieldToEventLoop();
      }
    } catch (err) {
      this.stopped = true;
      this.emit({ type: 'dead', error: `engine core failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}` });
    }
  }
}

function refuse(kind: 'generate' | 'encode'): never {
  throw wrongRunnerError(kind);
}
