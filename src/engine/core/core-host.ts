// Builds an EngineCore over a loaded model (runner, KV budget, limits) and drives its step
// loop. The same host runs inside the engine worker thread and in-process (useWorker=false).

import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createRunner, kvBytesPerBlock } from '../../model/runner';
import { seedGlobalSampler } from '../sampling';
import type { LoadedModel, ModelRunner, RunnerOptions } from '../../model/types';
import type { EngineOptions, EngineRequest } from '../types';
import { loadModel } from '../../model/load-model';
import type { ControlOp, CoreEvent, CoreInfo } from './protocol';
import { CompletionProcessorFactory } from './completion-processor';
import { EngineCore } from './engine-core';

/** Share of free memory the KV cache takes when --kv-cache-memory is not given. */
const AUTO_KV_MEMORY_FRACTION = 0.2;

export interface KvPlan {
  numBlocks: number;
  maxModelLen: number;
  bytesPerBlock: number;
}

/** What the KV budget is carved from (injectable for tests). */
export interface MemoryInfo {
  freeBytes: number;
  /** RAM on cpu; device memory with cuda (null when it cannot be read). */
  totalBytes: number | null;
  /** Already taken before the KV cache: the process (cpu) or the weights on the device (cuda). */
  usedBytes: number;
}

export function readMemoryInfo(model: LoadedModel, device: 'cpu' | 'cuda'): MemoryInfo {
  if (device === 'cpu') {
    // The session will hold its own copy of the weights besides what this process holds now.
    return { freeBytes: os.freemem(), totalBytes: os.totalmem(), usedBytes: process.memoryUsage().rss + weightBytes(model) };
  }
  return { freeBytes: os.freemem(), totalBytes: cudaDeviceMemory(), usedBytes: weightBytes(model) };
}

function weightBytes(model: LoadedModel): number {
  const weights = model.weights;
  if (!weights) return 0;
  return weights.names().reduce((n, name) => n + weights.get(name).data.byteLength, 0);
}

/** Total memory of the first visible CUDA device, from nvidia-smi; null when unavailable. */
function cudaDeviceMemory(): number | null {
  const visible = (process.env.CUDA_VISIBLE_DEVICES ?? '0').split(',')[0].trim() || '0';
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=memory.total', '--format=csv,noheader,nounits', '-i', visible], { encoding: 'utf8', timeout: 10_000 });
    const mib = Number(out.trim().split('\n')[0]);
    return Number.isFinite(mib) && mib > 0 ? mib * 2 ** 20 : null;
  } catch {
    return null;
  }
}

/** More blocks than a full batch of max-length sequences would never be used. */
function usefulBlocks(options: EngineOptions, maxModelLen: number): number {
  return options.maxNumSeqs * Math.ceil(maxModelLen / options.blockSize);
}

/**
 * Decides the number of KV blocks and the effective max_model_len. An explicit budget
 * that cannot hold one max_model_len sequence is a start-up error (as in vLLM); a derived
 * max_model_len is lowered to what the cache holds instead. Budget, in order: --num-gpu-blocks-override,
 * --kv-cache-memory-bytes, --gpu-memory-utilization × total memory − memory in use, else a share of free memory.
 */
export function planKvCache(model: LoadedModel, options: EngineOptions, memory: MemoryInfo = readMemoryInfo(model, options.device)): KvPlan {
  const blockSize = options.blockSize;
  const bytesPerBlock = kvBytesPerBlock(model.config, blockSize, options.kvCacheDtype ?? 'float32');
  let maxModelLen = options.maxModelLen ?? model.contextLength;
  if (options.maxModelLen !== null && options.maxModelLen > model.contextLength) {
    throw new Error(
      `max_model_len ${options.maxModelLen} is larger than the model's context length ${model.contextLength}.`,
    );
  }
  let numBlocks: number;
  if (options.numBlocksOverride != null) {
    numBlocks = options.numBlocksOverride;
  } else if (options.kvCacheMemoryBytes !== null) {
    numBlocks = Math.floor(options.kvCacheMemoryBytes / bytesPerBlock);
  } else if (options.gpuMemoryUtilization != null) {
    if (memory.totalBytes === null) {
      throw new Error('--gpu-memory-utilization: the device memory could not be read (nvidia-smi failed); give --kv-cache-memory-bytes instead.');
    }
    const budget = options.gpuMemoryUtilization * memory.totalBytes - memory.usedBytes;
    // Capped, as the default is, at what a full batch of max-length sequences could use.
    numBlocks = Math.min(usefulBlocks(options, maxModelLen), Math.floor(Math.max(0, budget) / bytesPerBlock));
    if (numBlocks < 1) {
      throw new Error(
        `--gpu-memory-utilization ${options.gpuMemoryUtilization} leaves no memory for the KV cache: ` +
          `${(options.gpuMemoryUtilization * memory.totalBytes / 2 ** 30).toFixed(2)} GiB allowed, ${(memory.usedBytes / 2 ** 30).toFixed(2)} GiB already used. Raise it.`,
      );
    }
  } else {
    numBlocks = Math.min(usefulBlocks(options, maxModelLen), Math.floor((memory.freeBytes * AUTO_KV_MEMORY_FRACTION) / bytesPerBlock));
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
  /** null while asleep. */
  private runner: ModelRunner | null;
  /** Kept through a level-1 sleep to rebuild the session; dropped (reloaded from disk) at level 2. */
  private model: LoadedModel | null;
  private idleWaiters: Array<() => void> = [];

  private constructor(
    readonly info: CoreInfo,
    private readonly core: EngineCore,
    runner: ModelRunner,
    model: LoadedModel,
    private readonly options: EngineOptions,
    private readonly runnerOptions: RunnerOptions,
    private readonly emit: (event: CoreEvent) => void,
  ) {
    this.runner = runner;
    this.model = model;
    this.loop = this.run();
  }

  /** Creates the runner and starts the step loop; events go to `emit`. */
  static async start(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void): Promise<EngineCoreHost> {
    const plan = planKvCache(model, options);
    seedGlobalSampler(options.seed ?? 0);
    const runnerOptions: RunnerOptions = {
      blockSize: options.blockSize,
      numBlocks: plan.numBlocks,
      device: options.device,
      intraOpThreads: options.intraOpThreads ?? defaultIntraOpThreads(),
      dtype: options.dtype ?? 'auto',
      kvCacheDtype: options.kvCacheDtype ?? 'float32',
    };
    const runner = await createRunner(model, runnerOptions);
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
      partialPrefills: options.partialPrefills,
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
    return new EngineCoreHost(info, core, runner, model, options, runnerOptions, emit);
  }

  /** Runs a control operation; the frontend awaits the 'control-done' event. */
  control(callId: number, op: ControlOp): void {
    this.runControl(op).then(
      () => this.emit({ type: 'control-done', callId, error: null }),
      (err: unknown) => this.emit({ type: 'control-done', callId, error: err instanceof Error ? err.message : String(err) }),
    );
  }

  private async runControl(op: ControlOp): Promise<void> {
    switch (op.op) {
      case 'reset_prefix_cache':
        this.core.kv.resetPrefixCache();
        return;
      case 'sleep': {
        if (op.mode === 'abort') this.core.abortAll();
        this.wake?.();
        await this.idle();
        const runner = this.runner;
        this.runner = null;
        if (op.level === 2) this.model = null;
        await runner?.dispose();
        this.core.kv.resetPrefixCache();
        return;
      }
      case 'wake': {
        if (this.runner) return;
        this.model ??= await loadModel({ ...this.options.load, loadWeights: true });
        const runner = await createRunner(this.model, this.runnerOptions);
        this.core.replaceRunner(runner);
        this.runner = runner;
        this.wake?.();
        return;
      }
    }
  }

  /** Resolves once no request is left in the core. */
  private idle(): Promise<void> {
    if (!this.core.hasWork()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
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

  async shutdown(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await this.runner?.dispose();
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped) {
        if (!this.core.hasWork()) {
          for (const resolve of this.idleWaiters.splice(0)) resolve();
        }
        if (!this.core.hasWork() || this.runner === null) {
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
