// A scripted EngineClient for controller-level tests (no model, no worker): each generate()
// yields the outputs `script` returns for the request. Lets HTTP-layer tests control exactly
// what the engine says, including errors and slow streams.

import type {
  EngineClient,
  EngineHealth,
  EngineRequest,
  IterationStats,
  RequestOutput,
  SchedulerStats,
} from '../../src/engine/types';
import type { ModelArchConfig } from '../../src/model/types';

export const FAKE_ARCH: ModelArchConfig = {
  architecture: 'llama',
  hiddenSize: 64,
  intermediateSize: 172,
  numLayers: 5,
  numHeads: 8,
  numKvHeads: 4,
  headDim: 8,
  vocabSize: 512,
  rmsNormEps: 1e-5,
  ropeTheta: 10000,
  ropeScaling: null,
  maxPositionEmbeddings: 512,
  tieWordEmbeddings: true,
  attentionBias: false,
};

export type Script = (request: EngineRequest, signal?: AbortSignal) => AsyncIterable<RequestOutput>;

export class FakeEngine implements EngineClient {
  readonly modelConfig = FAKE_ARCH;
  readonly maxModelLen = 512;
  readonly maxNumSeqs = 8;
  readonly tokenizer = null;
  readonly chatTemplate = null;
  readonly eosTokenIds = [2];
  readonly generationDefaults = {};
  readonly audioFeatures = null;
  alive = true;
  readonly aborted: string[] = [];
  readonly requests: EngineRequest[] = [];
  shutdownCalls = 0;
  private readonly listeners = new Set<(stats: IterationStats) => void>();

  constructor(private readonly script: Script = async function* () {}) {}

  generate(request: EngineRequest, signal?: AbortSignal): AsyncIterable<RequestOutput> {
    this.requests.push(request);
    return this.script(request, signal);
  }

  abort(requestIds: string[]): void {
    this.aborted.push(...requestIds);
  }

  health(): EngineHealth {
    return this.alive ? { alive: true } : { alive: false, error: 'engine stopped' };
  }

  stats(): SchedulerStats {
    return { numRunning: 1, numWaiting: 2, kvCacheUsage: 0.25, numBlocks: 64, blockSize: 16 };
  }

  onIteration(listener: (stats: IterationStats) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Feeds one step's stats to the subscribers (the metrics module). */
  emit(stats: IterationStats): void {
    for (const listener of this.listeners) listener(stats);
  }

  async shutdown(): Promise<void> {
    this.shutdownCalls += 1;
  }
}
