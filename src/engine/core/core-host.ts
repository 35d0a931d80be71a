// Builds an EngineCore over a loaded model (runner, KV budget from kv-plan.ts, limits), drives its
// step loop, and runs the control operations (sleep / wake_up / reset_prefix_cache). The same host
// runs inside the engine worker thread and in-process (useWorker=false).

import * as os from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createRunner } from '../../model/runner';
import { seedGlobalSampler } from '../sampling';
import type { LoadedModel, ModelRunner, RunnerOptions } from '../../model/types';
import type { EngineOptions, EngineRequest } from '../types';
import { loadModel } from '../../model/load-model';
import type { ControlOp, CoreEvent, CoreInfo } from './protocol';
import { CompletionProcessorFactory } from './completion-processor';
import { planKvCache } from './kv-plan';
import { EngineCore } from './engine-core';

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
