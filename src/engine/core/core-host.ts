// Builds the engine core over a loaded model — EngineCore (runner, KV budget from kv-plan.ts,
// sampling) for generation models, PoolingCore (no KV) for pooling models — drives its step loop,
// and runs the control operations (sleep / wake_up / reset_prefix_cache). The same host
// runs inside the engine worker thread and in-process (useWorker=false).

import * as os from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createRunner, resolveKvCacheDtype } from '../../model/runner';
import { createPoolingRunner } from '../../model/runner/pooling-runner';
import { wrongRunnerError } from '../errors';
import { seedGlobalSampler } from '../sampling';
import { generatesTokens, type LoadedModel, type RunnerOptions } from '../../model/types';
import type { EncodeRequest, EngineOptions, EngineRequest, SleepLevel, SleepMode } from '../types';
import { loadModel } from '../../model/load-model';
import type { CoreEvent, CoreInfo, EngineCommands } from './protocol';
import { CompletionProcessorFactory } from './completion-processor';
import { planKvCache } from './kv-plan';
import { EngineCore } from './engine-core';
import { startGrammarEngines, type GrammarEngines } from './grammar-admission';
import { PoolingCore } from './pooling-core';

/**
 * Every core. Idle intra-op threads sleep (allow_spinning 0, session.ts), so the HTTP thread gets
 * a core between steps. Measured on 2 cores, one thread against two, alternating runs:
 * `npm run bench -- --models 100m,stories --prompts short --concurrency 1,32` gave 100M Q8_0
 * 144-152 -> 174-176 tok/s at 1 stream and 665-672 -> 758-820 at 32; stories260K 3035 -> 3401
 * and 16079 -> 19770. bench/engine-lag (32 streams) kept the HTTP thread's event-loop lag p99 at
 * 3.0 ms (100M; 1.6 with one thread) and 4.4-4.7 ms (stories; 6.8 with one). A pooling model's
 * steps are few and large, so it gains the same way (a 16 x 128-token MiniLM forward: 138 ms
 * with two threads, 305 ms with one). VLLM_CPU_OMP_THREADS_BIND picks fewer.
 * Re-measured for the smallest model alone (stories260K served, short prompts, 64 tokens,
 * alternating rounds): one thread against two at 1 stream TPOT p50 0.224 vs 0.210 ms (medians
 * of 3) and 0.217-0.240 vs 0.197-0.219 in 3 more rounds; at 32 streams 24.3k-27.9k vs
 * 19.4k-21.3k tok/s in 2 quiet rounds. A size-dependent default would trade the one-stream
 * figure for the 32-stream one on stories only, so it stays every core.
 */
export function defaultIntraOpThreads(): number {
  return os.availableParallelism();
}

interface Disposable {
  dispose(): Promise<void>;
}

/** What the host drives: a generation core (KV cache, streams) or a pooling core (neither). */
type HostedCore = EngineCore | PoolingCore;

/** Builds a runner for `model` and hands it to the core (wakeUp). */
type AttachRunner = (model: LoadedModel) => Promise<Disposable>;

export class EngineCoreHost implements EngineCommands {
  private stopped = false;
  private wake: (() => void) | null = null;
  private readonly loop: Promise<void>;
  /** null while asleep. */
  private runner: Disposable | null;
  /** Kept through a level-1 sleep to rebuild the session; dropped (reloaded from disk) at level 2. */
  private model: LoadedModel | null;
  /** False for a model the host owns (start's ownsModel): every wake_up reloads from disk and lets go again. */
  private holdModel = true;
  private idleWaiters: Array<() => void> = [];

  private constructor(
    readonly info: CoreInfo,
    private readonly core: HostedCore,
    private readonly attachRunner: AttachRunner,
    runner: Disposable,
    model: LoadedModel,
    private readonly options: EngineOptions,
    private readonly emit: (event: CoreEvent) => void,
    private readonly grammars: GrammarEngines | null,
  ) {
    this.runner = runner;
    this.model = model;
    if (core instanceof EngineCore) core.onWork = () => this.wake?.();
    this.loop = this.run();
  }

  /** Creates the runner and starts the step loop; events go to `emit`. */
  /**
   * `ownsModel`: the caller loaded `model` from `options.load` and keeps no other use for it. The
   * runner then lets go of each weight once the session holding its own copy is built, and the
   * host keeps no reference: otherwise the loader's copy stays a second one for the server's
   * whole life (1.1 GB for a 1.1B Q8_0 model) and raises the start-up peak. wake_up then reloads
   * from disk at level 1 as at level 2.
   */
  static async start(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void, ownsModel = false): Promise<EngineCoreHost> {
    const host = generatesTokens(model.output)
      ? await EngineCoreHost.startGeneration(model, options, emit, ownsModel)
      : await EngineCoreHost.startPooling(model, options, emit);
    if (ownsModel) {
      host.holdModel = false;
      host.model = null;
    }
    return host;
  }

  private static async startGeneration(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void, ownsModel: boolean): Promise<EngineCoreHost> {
    const kvCacheDtype = resolveKvCacheDtype(model, options.kvCacheDtype ?? 'auto');
    const plan = planKvCache(model, { ...options, kvCacheDtype });
    seedGlobalSampler(options.seed ?? 0);
    const runnerOptions: RunnerOptions = {
      blockSize: options.blockSize,
      numBlocks: plan.numBlocks,
      device: options.device,
      intraOpThreads: options.intraOpThreads ?? defaultIntraOpThreads(),
      dtype: options.dtype ?? 'auto',
      kvCacheDtype,
      consumeWeights: ownsModel,
    };
    const runner = await createRunner(model, runnerOptions);
    console.info(
      `[engine] KV cache: ${plan.numBlocks} blocks of ${options.blockSize} tokens, ${kvCacheDtype} ` +
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
    // Structured outputs: a grammar worker thread with xgrammar's view of the vocabulary, built
    // once per model (none without a tokenizer).
    const grammars = model.tokenizer ? await startGrammarEngines(model.tokenizer, model.config.vocabSize, model.eosTokenIds, options.structuredOutputsLimits) : null;
    const core = new EngineCore(runner, config, processors, {
      onStep: (outputs, stats, iteration) => emit({ type: 'step', outputs, stats, iteration }),
      onReject: (requestId, err) => emit(rejection(requestId, err)),
    }, { engines: grammars, defaults: options.structuredOutputs, limits: options.structuredOutputsLimits });
    const info: CoreInfo = { numBlocks: plan.numBlocks, blockSize: options.blockSize, maxModelLen: plan.maxModelLen };
    const attachRunner: AttachRunner = async (m) => {
      const next = await createRunner(m, runnerOptions);
      core.replaceRunner(next);
      return next;
    };
    return new EngineCoreHost(info, core, attachRunner, runner, model, options, emit, grammars);
  }

  /** No KV cache: max_model_len is the model's (or the flag's), and one step holds at least one whole sequence. */
  private static async startPooling(model: LoadedModel, options: EngineOptions, emit: (event: CoreEvent) => void): Promise<EngineCoreHost> {
    const maxModelLen = options.maxModelLen ?? model.contextLength;
    if (maxModelLen > model.contextLength) {
      throw new Error(`max_model_len ${maxModelLen} is larger than the model's context length ${model.contextLength}.`);
    }
    const runnerOptions = { device: options.device, intraOpThreads: options.intraOpThreads ?? defaultIntraOpThreads(), dtype: options.dtype };
    const runner = await createPoolingRunner(model, runnerOptions);
    const budget = Math.max(options.maxNumBatchedTokens, maxModelLen);
    console.info(`[engine] pooling model: no KV cache, max_model_len ${maxModelLen}, ${budget} tokens per step`);
    const core = new PoolingCore(
      runner,
      { maxModelLen, maxNumSeqs: options.maxNumSeqs, maxNumBatchedTokens: budget, schedulingPolicy: options.schedulingPolicy, vocabSize: model.config.vocabSize, blockSize: options.blockSize },
      { onStep: (pooled, stats, iteration) => emit({ type: 'step', outputs: [], pooled, stats, iteration }) },
    );
    const info: CoreInfo = { numBlocks: 0, blockSize: options.blockSize, maxModelLen };
    const attachRunner: AttachRunner = async (m) => {
      const next = await createPoolingRunner(m, runnerOptions);
      core.replaceRunner(next);
      return next;
    };
    return new EngineCoreHost(info, core, attachRunner, runner, model, options, emit, null);
  }

  async sleep({ level, mode }: { level: SleepLevel; mode: SleepMode }): Promise<void> {
    if (mode === 'abort') this.core.abortAll();
    this.wake?.();
    await this.idle();
    const runner = this.runner;
    this.runner = null;
    if (level === 2) this.model = null;
    await runner?.dispose();
    this.clearPrefixCache();
  }

  async wakeUp(): Promise<void> {
    if (this.runner) return;
    const model = this.model ?? (await loadModel({ ...this.options.load, loadWeights: true }));
    this.runner = await this.attachRunner(model);
    if (this.holdModel) this.model = model;
    this.wake?.();
  }

  resetPrefixCache(): Promise<void> {
    this.clearPrefixCache();
    return Promise.resolve();
  }

  /** Nothing is cached between pooling requests. */
  private clearPrefixCache(): void {
    if (this.core instanceof EngineCore) this.core.kv.resetPrefixCache();
  }

  /** Resolves once no request is left in the core. */
  private idle(): Promise<void> {
    if (!this.core.hasWork()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  add(request: EngineRequest): void {
    this.accept(request.requestId, () => this.generationCore().addRequest(request));
  }

  encode(request: EncodeRequest): void {
    this.accept(request.requestId, () => this.poolingCore().addRequest(request));
  }

  /** Queues a request, or tells the frontend why not (RequestValidationError / EngineInvariantError there). */
  private accept(requestId: string, queue: () => void): void {
    try {
      queue();
    } catch (err) {
      this.emit(rejection(requestId, err));
      return;
    }
    this.wake?.();
  }

  abort(requestIds: string[]): void {
    this.core.abort(requestIds);
    this.wake?.();
  }

  /** A pooling request answers once: there is no stream to hold back. */
  pause(requestIds: string[]): void {
    if (this.core instanceof EngineCore) this.core.pause(requestIds);
  }

  resume(requestIds: string[]): void {
    if (this.core instanceof EngineCore) this.core.resume(requestIds);
    this.wake?.();
  }

  /** The generation core, or the error a pooling model answers a generation request with. */
  private generationCore(): EngineCore {
    if (!(this.core instanceof EngineCore)) throw wrongRunnerError('generate');
    return this.core;
  }

  private poolingCore(): PoolingCore {
    if (!(this.core instanceof PoolingCore)) throw wrongRunnerError('encode');
    return this.core;
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await this.runner?.dispose();
    await Promise.all([this.grammars?.client.close(), this.grammars?.trials.close()]);
  }

  /**
   * The step loop. It goes straight on to the next step after emitting one, without waiting for
   * the HTTP thread to take the output.
   *
   * Where a lone request's time to first token goes (issue 16; stories260K served, the bench's
   * /v1/completions stream with a short prompt, 64 tokens, one request at a time, 200 per run).
   * Measured with temporary timestamps taken across the client, the HTTP thread and the worker
   * (wall clock). Figures are p50 ms over 6-8 runs on the shared 2-core machine:
   * - client send -> Fastify's onRequest (client, kernel, HTTP parse, routing, earlier hooks) 0.55-0.74
   * - -> validation pipe (body read + JSON parse, later hooks, Nest's pipeline) 0.31-0.36
   * - class-validator on the DTO 0.17-0.21 (since cut to a few us for valid bodies:
   *   common/validation-fast-path.ts)
   * - CompletionServing.prepare (checks, inline tokenization: no pool hop for short prompts,
   *   sampling params) 0.24-0.29
   * - -> connection.add 0.08
   * - postMessage -> the worker's 'add' 0.10-0.12
   * - 'add' -> step start (the idle loop's wake) 0.10-0.12
   * - the first step (prefill of ~27 tokens, sample, detokenize) 0.42-0.67
   * - worker emit -> the HTTP thread handles the step 0.09-1.55. This one is bimodal. Its deciles
   *   in one run were 0.04 0.04 0.05 0.06 0.12 0.78 1.69 2.21 3.02 3.77. The HTTP thread sits
   *   idle in epoll meanwhile (event-loop utilisation between add and step: ~0.1 ms active). It
   *   is woken but gets no core while this loop runs the next decode steps. Intra-op threads
   *   1 instead of 2 left it the same.
   * - step -> first SSE write 0.09-0.11
   * - write -> the client parses the frame 0.21-0.42
   * TTFT p50 was 3.7-5.5 ms in these runs, with the timestamps on.
   * Part of that wait is made up afterwards: the tokens decoded meanwhile reach the client
   * together (ITL p50 0.0-0.1 ms against llama-server's 0.2-0.3 in `bench/serve.js`). In two
   * `bench/serve.js --models stories --prompts short --concurrency 1` rounds, ortllm's TTFT p50
   * was 3.8 / 5.6 ms against llama-server's 1.4 / 1.8, and E2E p50 16.8 / 18.4 against
   * 14.8 / 16.5. The c1 throughput ratio (0.89 / 0.95) follows E2E's ~2 ms gap: the HTTP side's
   * ~1.1-1.5 ms before the add, and part of the wake.
   * Not taken. Measured with a sequential client sending the bench's request 300 times (p50 TTFT,
   * mean E2E, ms), runs interleaved, two rounds:
   * - Letting the HTTP thread in after a request's first output (Atomics.wait 0.3 ms in the
   *   worker after that step's message). emit -> step fell to p50 0.06 and TTFT went 3.90 / 4.39 ->
   *   2.64 / 3.15, but E2E went 16.08 / 16.74 -> 17.35 / 21.47. With 0.1 ms: TTFT 2.98 / 3.40,
   *   E2E 18.66 / 17.94. A worker that gives up its core waits longer to get one back than the
   *   wake saves.
   * - The worker thread at nice +1 / +5 (os.setPriority; onnxruntime's pool threads inherit it).
   *   TTFT 2.64 / 4.67 -> 3.16 / 3.85 and 2.87 / 2.92; E2E 14.79 / 17.48 -> 15.99 / 18.03 and
   *   17.25 / 17.12: no clear gain.
   * Each HTTP-side stage before the add is 0.1-0.35 ms of many small costs. Cutting one is within
   * this machine's noise on E2E (~15 ms).
   * At 32 streams (stories260K served, short prompts, 64 tokens; per-thread CPU from /proc over
   * each run): the worker thread spends ~29-36 us per token (~1 ms a step against the runner's
   * 0.63-0.66 ms batch-32 step: the engine core's ~0.22 ms, bench/engine-overhead, and the step
   * message), the HTTP thread ~20-25 (common/sse.ts has its breakdown), the load generator ~15:
   * ~80 us of CPU per token on 2 cores is the ~24k tok/s ceiling the quiet runs reach. So every
   * microsecond of any thread counts there, and so does the machine's other load. Also not taken,
   * measured with two servers up side by side, runs alternating (tok/s):
   * - The worker thread at nice +5 for 32 streams: 19,961 / 19,133 against 23,848 / 24,350 at
   *   nice 0 in the two quiet rounds (1 stream the same, 5,230 / 5,183 against 5,108 / 5,198).
   * - The HTTP thread at nice +5 (set after the worker started, so only it and the threads it
   *   starts later), 100M Q8_0 at 32 streams: 785 / 673 against 938 / 655. Its ~2 ms of CPU a
   *   step is not what stretches the 100M model's step under load.
   * Where a 32-stream step goes on the 100M Q8_0 model (short prompts, 64 tokens: one wave of 32
   * requests; timestamps around core.step and runner.step, per-thread CPU from /proc, a quiet
   * spell of the shared machine), after the reused head buffer (segmented-runner.ts), the addon
   * pool's late-helper change (native/src/attention.cc) and one-thread norm segments: a 32-row
   * step 16.8 ms = the runner 16.2 (alone ~15.4) + the core's own work 0.65 (sampling, stop
   * checks, detokenizing, the step message) + 0.19 between steps. CPU per streamed token: the
   * step's thread ~560-620 us, the addon's helper ~310-330, the HTTP thread ~45-50, the load
   * generator ~30 (cli/bench/request.ts), V8's helper threads ~20-25 (~150 before the head
   * buffer: scavenges for the dropped 4 MB logits arrays). A wave's first token takes 65-100 ms:
   * the first requests start steps of their own (1 sequence, then 4) while the HTTP thread is
   * still taking the others in, then the rest prefill together.
   * Also not taken: the server on `--single-threaded-gc` (V8's collection on the collecting
   * thread, not its helpers), 100M Q8_0 at 32 streams, both up, waves alternating, 6 each:
   * median 1964 -> 1816 tok/s.
   * Where one stream's step-to-step interval goes (stories260K served, short prompts, 64 tokens,
   * 1 stream, 300 requests a run; temporary timers in this loop, around runner.step and around the
   * worker's postMessage; us per token). On a quiet machine: runner.step 138, the rest of
   * core.step (schedule, sample, detokenize, stop checks, outputs, encodeStep) ~7, postMessage
   * 12.6, the yield below 4.8: 162 (TPOT 0.16 ms; the runner alone 0.13-0.15). Under the other
   * sessions' load: runner.step 168-186, postMessage 46-60, the yield 8-13: 223-251. The HTTP
   * thread's ~60 us a chunk (common/sse.ts) runs beside this loop on the other core; it lengthens
   * the step only when it takes the worker's core. That is what postMessage's time is: the message
   * wakes the HTTP thread, which Linux places on the waker's CPU when no other is idle and lets
   * preempt the worker. A stand-in worker posting every 150 us to an idle main thread: 84-145 us
   * a post; 5-7 while the main thread was busy; 19-30 with the two threads pinned to different
   * CPUs. bench/engine-overhead (no HTTP, no worker) shows the same engine share: engine 0.174 /
   * 0.179 ms a step, the runner inside it 0.145 / 0.153, the runner alone 0.132 / 0.134.
   * Not taken either (served as above, runs alternating):
   * - The HTTP thread at SCHED_BATCH (sched_setscheduler from a small addon, once the worker was
   *   up, so the worker and onnxruntime's threads kept the normal policy): a woken SCHED_BATCH
   *   thread never preempts. postMessage fell to 5-16 us under load, but tok/s at 1 stream went
   *   4807 / 4239 / 4540 -> 4796 / 4750 / 4768 (TTFT p50 2.21 / 3.14 / 2.40 -> 2.36 / 2.32 /
   *   2.29 ms) in quieter rounds and 2472 / 3508 / 3086 / 2987 -> 2246 / 3042 / 2979 / 3221
   *   (TTFT p50 4.54-4.92 -> 5.20-6.21) under load; at 32 streams 8625 / 13450 / 6998 -> 9884 /
   *   7753 / 10366. runner.step in the loop was longer in most of those runs (under load
   *   174-188 -> 184-243 us), taking back what postMessage saved, and a request's first wake-up
   *   (TTFT) waits behind the machine's other processes.
   * - Taking commands with receiveMessageOnPort between steps and a turn of the event loop only
   *   every 1 ms: `await setImmediate()` costs 1.0-2.3 us in a worker with nothing pending (4.8
   *   in this loop on the quiet machine), receiveMessageOnPort 0.04-0.08. At most ~3% of the
   *   0.15 ms step, below the served bench's noise, for a loop that would hold grammar results
   *   and timers back.
   * The engine core's own share was cut after this (engine-core.ts has the figures: a batch-32
   * decode step 105-126 -> 86-104 us of CPU, batch 1 unchanged at ~10-16). In the served bench
   * (`bench/serve.js --models stories --prompts short,long --concurrency 1,32 --max-tokens 64
   * --repeat 2 --peer llama-server`, two rounds alternating with the build before, the shared
   * machine loaded by other builds) every figure moved with the load more than with the change:
   * short prompts 1 stream 3464 / 3665 -> 3801 / 3595 tok/s, TPOT p50 0.21 / 0.20 -> 0.21 /
   * 0.19 ms against runner batch-1 steps of 0.14-0.21; 32 streams 17.5k / 22.7k -> 27.6k /
   * 21.7k; long prompts 1 stream TPOT 0.27 / 0.24 -> 0.27 / 0.27. What keeps one stream's TPOT
   * above 1.2x the runner's step is not this loop's CPU (~10-16 us a step of ~160-270): it is
   * the HTTP thread's ~50-65 us a chunk (common/sse.ts; mostly the kernel's socket write and
   * wake-ups) and the load generator's own work, on the two cores the runner's two threads use.
   * At 32 streams the ~80 us of CPU per token across threads above still bounds the batching
   * gain: the runner is ~18 us of it, the engine core ~3, so 8x (~45k tok/s) is out of reach on
   * two cores while the HTTP thread (~16-18) and the client (~15) share them. With ~700-token
   * prompts the 32-stream figure is bound by prefill (32 x 700 tokens at the runner's ~55k
   * prompt tok/s is ~0.4 s of a wave's ~0.5 s), not by the step loop.
   */
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

function rejection(requestId: string, err: unknown): CoreEvent {
  const e = err as Error & { param?: string | null };
  return { type: 'rejected', requestId, message: e.message, param: e.param ?? null, name: e.name };
}
