// Creates the onnxruntime-node session for a built graph on the requested execution provider.
//
// Two kinds: ort.InferenceSession (async run) for runners with one or two runs per step, and
// SyncSession for the segmented runner, which runs L+1 sessions per step (one per layer and the
// head). onnxruntime-node's InferenceSession.run wraps the binding's synchronous run in a
// setImmediate and a Promise, and checks the feeds and rebuilds the result map in JS: one
// event-loop turn and two allocations per call. SyncSession calls the binding's run directly
// (onnxruntime-node's own `dist/binding`, the module its InferenceSession wraps, pinned by the
// lock file). Figures (SyncSession against InferenceSession, and what a run costs in the binding,
// hence the segments' one packed output): docs/perf/onnxruntime-sessions.md.
//
// CUDA caveat: the KV cache is a set of CPU inputs, and the node binding has no CUDA IO binding,
// so ORT copies the cache inputs to the device on every run (measured on an H200: docs/cuda.md).
import * as ort from 'onnxruntime-node';
import { binding, initOrt, type Binding } from 'onnxruntime-node/dist/binding';
import { BuiltModel } from '../graph/graph-builder';

type Device = 'cpu' | 'cuda';

export interface SessionSettings {
  device: Device;
  intraOpThreads?: number;
  /** onnxruntime's CPU memory arena; off unless the runner kind measured a gain (see below). */
  memoryArena?: boolean;
  /**
   * How long (microseconds) an idle intra-op thread spins for more work before it sleeps; 0 or
   * unset: it sleeps at once (see allow_spinning below). For runners measured to gain from it.
   */
  spinMicroseconds?: number;
}

/** Set by bench/profile.ts: sessions created from then on write onnxruntime's profile. */
let profiling: { prefix: string; sessions: Array<{ endProfiling(): void }> } | null = null;

/** Every session created from here on profiles into `<prefix>_<date>.json`; returns them as they are made (bench/profile.ts). */
export function profileSessionsInto(prefix: string): Array<{ endProfiling(): void }> {
  profiling = { prefix, sessions: [] };
  return profiling.sessions;
}

export function sessionOptions(settings: SessionSettings): ort.InferenceSession.SessionOptions {
  if (settings.intraOpThreads !== undefined && (!Number.isInteger(settings.intraOpThreads) || settings.intraOpThreads < 0)) {
    throw new Error(`intraOpThreads must be a non-negative integer, got ${settings.intraOpThreads}`);
  }
  const spin = settings.spinMicroseconds ?? 0;
  if (!Number.isInteger(spin) || spin < 0) throw new Error(`spinMicroseconds must be a non-negative integer, got ${settings.spinMicroseconds}`);
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
    // Intra-op threads never spin by default. Each session has its own pool, and a segmented
    // step runs one session per layer with the native attention kernel's threads between runs, so pools left
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
    // A bounded spin (session.intra_op.spin_duration_us, onnxruntime 1.26+) is another matter: the
    // threads spin through the short gaps between a run's parallel sections but sleep within
    // microseconds of its end. The pooling runner takes it (pooling-runner.ts has the figures).
    extra: { session: { intra_op: spin > 0 ? { allow_spinning: '1', spin_duration_us: String(spin) } : { allow_spinning: '0' } } },
    ...(profiling ? { enableProfiling: true, profileFilePrefix: profiling.prefix } : {}),
  };
}

export async function createSession(model: BuiltModel, settings: SessionSettings): Promise<ort.InferenceSession> {
  const options = { ...sessionOptions(settings), externalData: model.externalData };
  const session = await explainCudaFailure(settings, ort.InferenceSession.create(model.modelBytes, options));
  profiling?.sessions.push(session);
  return session;
}

/** A session whose run is one synchronous call into onnxruntime (see the header). */
export class SyncSession {
  /** Every output, fetched into new buffers (the binding's `null` = let onnxruntime allocate). */
  private readonly fetches: Record<string, null>;

  private constructor(private readonly native: Binding.InferenceSession) {
    this.fetches = Object.fromEntries(native.outputMetadata.map((m) => [m.name, null]));
  }

  static create(model: BuiltModel, settings: SessionSettings): SyncSession {
    initOrt();
    const native = new binding.InferenceSession();
    const bytes = model.modelBytes;
    try {
      native.loadModel(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength, { ...sessionOptions(settings), externalData: model.externalData });
    } catch (err) {
      throw settings.device === 'cuda' ? cudaUnavailable(err) : err;
    }
    const session = new SyncSession(native);
    profiling?.sessions.push(session);
    return session;
  }

  /** The graph's input names. */
  get inputNames(): string[] {
    return this.native.inputMetadata.map((m) => m.name);
  }

  /** Runs the graph on `feeds` (every input, by name) and returns every output. */
  run(feeds: Record<string, ort.Tensor>): Record<string, ort.Tensor> {
    return this.native.run(feeds, this.fetches, {});
  }

  endProfiling(): void {
    this.native.endProfiling();
  }

  release(): Promise<void> {
    this.native.dispose();
    return Promise.resolve();
  }
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
