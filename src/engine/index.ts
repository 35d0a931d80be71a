// The engine's front door: `createEngine(options)` → EngineClient.
// The calling (HTTP) thread loads only metadata, tokenizer and chat template; the weights,
// the runner and the step loop live in a worker thread (useWorker) or, for tests, in-process.

import { loadModel } from '../model/load-model';
import type { LoadedModel } from '../model/types';
import { EngineCoreHost, type CoreSeams } from './core/core-host';
import type { CoreConnection, CoreEvent } from './core/protocol';
import { EngineFrontend } from './engine-frontend';
import { InlineTextProcessor, PooledTextProcessor, spawnTextWorkers } from './text/text-processor';
import type { EngineClient, EngineOptions } from './types';
import { spawnEngineWorker } from './worker/spawn-worker';
import { keepCudaFloat32Exact } from '../model/runner/cuda-numerics';

export type { EngineClient, EngineOptions } from './types';

export async function createEngine(options: EngineOptions): Promise<EngineClient> {
  // On this (main) thread, before any CUDA session exists: see cuda-numerics.ts.
  if (options.device === 'cuda') keepCudaFloat32Exact();
  if (!options.useWorker) {
    const model = await loadModel({ ...options.load, loadWeights: true });
    return createInProcessEngine(model, options);
  }
  let frontend: EngineFrontend | null = null;
  const early: CoreEvent[] = [];
  const onEvent = (event: CoreEvent) => (frontend ? frontend.handleEvent(event) : early.push(event));
  // The worker loads the weights while this thread (and the text workers) load the tokenizer/template.
  // xgrammar never runs on this thread: the engine core's workers read and compile every spec.
  const [loaded, spawned, texts] = await Promise.allSettled([
    loadModel({ ...options.load, loadWeights: false }),
    spawnEngineWorker(options, onEvent),
    spawnTextWorkers(options.load, options.load.skipTokenizer ? 0 : (options.tokenizerPoolSize ?? 0)),
  ]);
  const failure = [loaded, spawned, texts].find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) {
    if (spawned.status === 'fulfilled') await spawned.value.shutdown();
    if (texts.status === 'fulfilled') await Promise.allSettled(texts.value.map((w) => w.terminate()));
    throw failure.reason;
  }
  const model = (loaded as PromiseFulfilledResult<LoadedModel>).value;
  const connection = (spawned as PromiseFulfilledResult<CoreConnection>).value;
  const workers = (texts as PromiseFulfilledResult<Awaited<ReturnType<typeof spawnTextWorkers>>>).value;
  const text = model.tokenizer
    ? workers.length > 0
      ? new PooledTextProcessor(model.tokenizer, model.chatTemplate, workers)
      : new InlineTextProcessor(model.tokenizer, model.chatTemplate)
    : null;
  frontend = new EngineFrontend(model, options, connection.info, text);
  frontend.attach(connection);
  for (const event of early) frontend.handleEvent(event);
  return frontend;
}

/** Runs the core on this thread over an already loaded model (with weights); tests may pass seams. */
export async function createInProcessEngine(model: LoadedModel, options: EngineOptions, seams: CoreSeams = {}): Promise<EngineClient> {
  let frontend: EngineFrontend | null = null;
  const host = await EngineCoreHost.start(model, options, (event) => frontend?.handleEvent(event), false, seams);
  // The host takes every command itself: a 'call' is its method's promise.
  const connection: CoreConnection = host;
  const text = model.tokenizer ? new InlineTextProcessor(model.tokenizer, model.chatTemplate) : null;
  frontend = new EngineFrontend(model, options, connection.info, text);
  frontend.attach(connection);
  return frontend;
}
