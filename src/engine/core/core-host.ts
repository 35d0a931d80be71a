// Builds an EngineCore over a loaded model (runner, KV budget, limits) and drives its step
// loop. The same host runs inside the engine worker thread and in-process (useWorker=false).

import * as os from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createRunner, kvBytesPerBlock } from '../../model/runner';
import type { LoadedModel, ModelRunner } from '../../model/types';
import type { EngineOptions, EngineRequest } from '../types';
import type { CoreEvent, CoreInfo } from './protocol';
import { CompletionProcessorFactory } from './completion-processor';
import { EngineCore } from './engine-core';

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

export class EngineCoreHost {
  private stopped = false;
  private wake: (() => void) | null = null;
  private readonly loop: Promise<void>;

  private constructor(
    readonly info: CoreInfo,
    private readonly core: EngineCore,
    private readonly runner: ModelRunner,
    private readonly emit: (event: CoreEvent) => void,
  ) {
    this.loop = this.run();
  }

  /** Creates the runner and starts the step loop; events go to `emit`. */
  static async start(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void): Promise<EngineCoreHost> {
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
    return new EngineCoreHost(info, core, runner, emit);
  }

  add(request: EngineRequest): void {
    try {
      this.core.addRequest(request);
    } catch (err) {
      const e = err as Error & { param?: string | null };
      this.emit({ type: 'rejected', requestId: request.requestId, message: e.message, param: e.param ?? null, name: e.name });
      return;
    }
    this.wake?.();
  }

  abort(requestIds: string[]): void {
    this.core.abort(requestIds);
    this.wake?.();
  }

  pause(requestIds: string[]): void {
    this.core.pause(requestIds);
  }

  resume(requestIds: string[]): void {
    this.core.resume(requestIds);
    this.wake?.();
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await this.runner.dispose();
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped) {
        if (!this.core.hasWork()) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          this.wake = null;
          continue;
        }
        await this.core.step();
        // Lets add/abort messages in between steps even when a step did no async work.
        await yieldToEventLoop();
      }
    } catch (err) {
      this.stopped = true;
      this.emit({ type: 'dead', error: `engine core failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}` });
    }
  }
}
