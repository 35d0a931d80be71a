// Creates the onnxruntime-node session for a built graph on the requested execution provider.
// CUDA caveat (not measurable here: no GPU): the KV cache is a set of CPU inputs, and the node
// binding has no CUDA IO binding, so ORT copies the cache inputs to the device on every run.
import * as ort from 'onnxruntime-node';
import { BuiltModel } from '../graph/graph-builder';

type Device = 'cpu' | 'cuda';

export interface SessionSettings {
  device: Device;
  intraOpThreads?: number;
  /** onnxruntime's CPU memory arena; off unless the runner kind measured a gain (see below). */
  memoryArena?: boolean;
}

function sessionOptions(settings: SessionSettings): ort.InferenceSession.SessionOptions {
  if (settings.intraOpThreads !== undefined && (!Number.isInteger(settings.intraOpThreads) || settings.intraOpThreads < 0)) {
    throw new Error(`intraOpThreads must be a non-negative integer, got ${settings.intraOpThreads}`);
  }
  return {
    executionProviders: [settings.device],
    graphOptimizationLevel: 'all',
    // One forward pass at a time; parallelism comes from intra-op threads.
    executionMode: 'sequential',
    interOpNumThreads: 1,
    // No arena by default: each session's arena keeps its largest step's activations for good,
    // and the segmented runner has one session per layer (1.1B Q8_0 after a 200-token prefill:
    // 2263 MiB resident with arenas, 1715 without). Steps measured the same either way
    // (100M Q8_0, prefill 700 and batch-1/32 decode, interleaved runs within noise); so did the
    // pooling runner (MiniLM-shaped BERT, bench/embed-forward and bench:embed). A runner whose
    // steps allocate large buffers every run opts in through `memoryArena` (the Whisper runner).
    enableCpuMemArena: settings.memoryArena ?? false,
    ...(settings.intraOpThreads ? { intraOpNumThreads: settings.intraOpThreads } : {}),
    // Intra-op threads never spin. Each session has its own pool, and a segmented step runs one
    // session per layer with the native attention kernel's threads between runs, so pools left
    // spinning after their run (allow_spinning 1) take the cores from the next: 100M Q8_0,
    // runner alone batch 1 175 -> 91 tok/s, served 1 stream 171 -> 18. Spinning only inside a
    // run (allow_spinning 1 with session.force_spinning_stop 1) gains at 1 stream and loses
    // under load, where the spinning threads take the core the HTTP thread needs: served 100M
    // (`npm run bench -- --models 100m --prompts short --concurrency 1,32`) 1 stream 171 -> 185
    // tok/s, 32 streams 925 -> 946-975, but bench/engine-lag (32 streams) 501-516 -> 342-379
    // tok/s, stories260K 13171-18974 -> 5647-14075, runner alone stories260K batch 32 704-793
    // -> 610-628 steps/s, and the pooling runner (bench:embed, 16 tokens) 32 concurrent 434-471
    // -> 403-439/s. A lone 1x16 MiniLM forward (the pooling graph alone, 2 ms between runs) is
    // where spinning gains most, 4.3-4.4 ms median -> 2.4-3.0 (one thread 3.6-4.6); served, it did
    // not carry over: bench:embed 16 tokens at concurrency 1 ran p50 9-12 ms against 6-7 without
    // (86.7-90.0 against 127.6-158.8/s; the server's CPU 11.9-12.5 against 5.6-6.9 ms per
    // embedding; two interleaved runs each, on a loaded machine). onnxruntime-node's RunOptions
    // carry no config entries (only logSeverityLevel and tag reach the native run), so spinning
    // cannot be chosen per step.
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
}

export async function createSession(model: BuiltModel, settings: SessionSettings): Promise<ort.InferenceSession> {
  const options = { ...sessionOptions(settings), externalData: model.externalData };
  return explainCudaFailure(settings, ort.InferenceSession.create(model.modelBytes, options));
}

/** Opens an ONNX file (an Optimum / transformers.js export). */
export async function createFileSession(path: string, settings: SessionSettings): Promise<ort.InferenceSession> {
  return explainCudaFailure(settings, ort.InferenceSession.create(path, sessionOptions(settings)));
}

async function explainCudaFailure(settings: SessionSettings, creating: Promise<ort.InferenceSession>): Promise<ort.InferenceSession> {
  try {
    return await creating;
  } catch (err) {
    throw settings.device === 'cuda' ? cudaUnavailable(err) : err;
  }
}

function cudaUnavailable(err: unknown): Error {
  const reason = err instanceof Error ? err.message : String(err);
  const cuda = ort.listSupportedBackends?.().find((b) => b.name === 'cuda');
  if (cuda && !cuda.bundled && /load|shared library|cuda/i.test(reason)) {
    return new Error(
      'device "cuda" is not available: onnxruntime-node\'s CUDA execution provider libraries ' +
        '(libonnxruntime_providers_cuda.so, libonnxruntime_providers_shared.so) are not installed. ' +
        'Reinstall onnxruntime-node with ONNXRUNTIME_NODE_INSTALL=cuda12 on a machine with CUDA 12 and cuDNN 9, ' +
        `or run with --device cpu. (onnxruntime: ${reason})`,
    );
  }
  return new Error(`device "cuda": onnxruntime could not create a CUDA session: ${reason}`);
}
