// The EngineClient of tests that run the HTTP and serving layers without a model or a worker:
// it "samples" a fixed token script, but text, stop strings, EOS and length limits go through
// the real SequenceOutputProcessor, and output kinds, logprobs, abort and disconnect behave as
// the engine's contract says. Health, scheduler stats and iteration stats are settable.

import { SequenceOutputProcessor } from '../../src/engine/detokenizer';
import type {
  SleepLevel,
  SleepState,
  EngineClient,
  EngineHealth,
  EngineRequest,
  LoraRequest,
  FinishReason,
  IterationStats,
  PoolingRequestOutput,
  PositionLogprobs,
  RequestOutput,
  SchedulerStats,
  SequenceReservation,
} from '../../src/engine/types';
import { OUTPUT_KIND, type TextProcessor } from '../../src/engine/types';
import { InlineTextProcessor } from '../../src/engine/text/text-processor';
import type { ChatTemplate, DecoderArchConfig, Tokenizer } from '../../src/model/types';

/** A llama-shaped config of the given vocabulary and context (nothing runs it). */
export function fakeArch(vocabSize = 512, maxPositionEmbeddings = 512): DecoderArchConfig {
  return {
    architecture: 'llama',
    hiddenSize: 8,
    intermediateSize: 16,
    numLayers: 1,
    numHeads: 1,
    numKvHeads: 1,
    headDim: 8,
    vocabSize,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropeScaling: null,
    maxPositionEmbeddings,
    tieWordEmbeddings: true,
    attentionBias: false,
  };
}

export interface FakeEngineOptions {
  tokenizer?: Tokenizer | null;
  /** Token ids "sampled" in order (cycled); generate() refuses to run without one. */
  script?: number[];
  maxModelLen?: number;
  maxNumSeqs?: number;
  vocabSize?: number;
  eosTokenIds?: number[];
  /** Delay between steps, to keep requests in flight (abort tests). */
  stepDelayMs?: number;
  chatTemplate?: ChatTemplate | null;
  /** What stats() reports; by default the in-flight count and an empty cache. */
  stats?: SchedulerStats;
  /** loadLora rejects with this message when it returns one (an adapter the engine cannot serve). */
  refuseLora?: (request: LoraRequest) => string | null;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Logprobs the fake engine reports: the sampled token at rank 2 behind token 0 (rank 1), then ids 1, 2, … */
function fakeLogprobs(tokenId: number, k: number): PositionLogprobs {
  const top = [{ tokenId: 0, logprob: -0.25, rank: 1 }];
  for (let id = 1; top.length < Math.max(k, 1) + 1; id++) top.push({ tokenId: id, logprob: -1 - id, rank: id + 1 });
  const chosen = tokenId === 0 ? top[0] : { tokenId, logprob: -0.75, rank: 7 };
  return { chosen, top: top.slice(0, Math.max(k, 0)) };
}

export class FakeEngine implements EngineClient {
  readonly modelConfig: DecoderArchConfig;
  readonly maxModelLen: number;
  readonly maxNumSeqs: number;
  readonly tokenizer: Tokenizer | null;
  readonly chatTemplate: ChatTemplate | null;
  /** The tokenizer and template, run inline (no text workers in these tests). */
  readonly text: TextProcessor | null;
  readonly eosTokenIds: number[];
  readonly generationDefaults = {};
  readonly audioFeatures = null;
  readonly modelOutput = { kind: 'logits' } as const;
  readonly pooler = null;
  readonly requests: EngineRequest[] = [];
  readonly aborted: string[] = [];
  /** false: health() reports a dead engine. */
  alive = true;
  shutdownCalls = 0;
  private readonly live = new Map<string, () => void>();
  private readonly listeners = new Set<(stats: IterationStats) => void>();

  constructor(private readonly options: FakeEngineOptions = {}) {
    this.tokenizer = options.tokenizer ?? null;
    this.chatTemplate = options.chatTemplate ?? null;
    this.text = this.tokenizer ? new InlineTextProcessor(this.tokenizer, this.chatTemplate) : null;
    this.maxModelLen = options.maxModelLen ?? 256;
    this.maxNumSeqs = options.maxNumSeqs ?? 4;
    this.eosTokenIds = options.eosTokenIds ?? [];
    this.modelConfig = fakeArch(options.vocabSize ?? options.tokenizer?.vocabSize ?? 512, this.maxModelLen);
  }

  /** Ids of requests still generating. */
  get inFlight(): string[] {
    return [...this.live.keys()];
  }

  /** Admits everything (no --max-num-queued-reqs bound in these tests). */
  ensureCapacity(): void {}

  reserve(sequences: number): SequenceReservation {
    return { sequences, release: () => undefined };
  }

  async *generate(request: EngineRequest, signal?: AbortSignal): AsyncGenerator<RequestOutput> {
    this.requests.push(request);
    const script = this.options.script ?? [];
    if (script.length === 0) throw new Error('FakeEngine: generate() needs a token script');
    const { params } = request;
    let abortReason: FinishReason | null = null;
    this.live.set(request.requestId, () => (abortReason = 'abort'));
    const onSignal = (): void => {
      abortReason = 'abort';
    };
    signal?.addEventListener('abort', onSignal);
    const seqs = Array.from({ length: params.n }, () => new SequenceOutputProcessor({
      params,
      tokenizer: this.tokenizer,
      promptTokenIds: request.promptTokenIds,
      eosTokenIds: this.eosTokenIds,
      maxTokens: params.max_tokens ?? this.maxModelLen - request.promptTokenIds.length,
      maxModelLen: this.maxModelLen,
    }));
    const sent = seqs.map(() => 0);
    const output = (finalOnly: boolean): RequestOutput => ({
      requestId: request.requestId,
      promptTokenIds: request.promptTokenIds,
      promptLogprobs:
        params.prompt_logprobs === null
          ? null
          : request.promptTokenIds.map((id, i) => (i === 0 ? null : fakeLogprobs(id, params.prompt_logprobs ?? 0))),
      outputs: seqs.map((seq, index) => {
        const delta = params.output_kind === OUTPUT_KIND.DELTA && !finalOnly;
        const ids = delta ? seq.tokenIds.slice(sent[index]) : [...seq.tokenIds];
        sent[index] = seq.tokenIds.length;
        return {
          index,
          text: seq.nextText(delta),
          tokenIds: ids,
          cumulativeLogprob: null,
          logprobs: params.logprobs === null ? null : ids.map((id) => fakeLogprobs(id, params.logprobs ?? 0)),
          finishReason: seq.finishStatus?.finishReason ?? null,
          stopReason: seq.finishStatus?.stopReason ?? null,
        };
      }),
      finished: seqs.every((s) => s.finished),
      numCachedTokens: 0,
    });
    try {
      for (let step = 0; ; step++) {
        if (this.options.stepDelayMs) await sleep(this.options.stepDelayMs);
        else await Promise.resolve();
        for (const seq of seqs) {
          if (seq.finished) continue;
          if (abortReason) seq.finish(abortReason);
          else seq.appendToken(script[(step + seqs.indexOf(seq)) % script.length]);
        }
        const done = seqs.every((s) => s.finished);
        if (params.output_kind !== OUTPUT_KIND.FINAL_ONLY || done) yield output(false);
        if (done) return;
      }
    } finally {
      this.live.delete(request.requestId);
      signal?.removeEventListener('abort', onSignal);
    }
  }

  encode(): Promise<PoolingRequestOutput> {
    return Promise.reject(new Error('this fake engine generates only'));
  }

  abort(requestIds: string[]): void {
    for (const id of requestIds) {
      this.aborted.push(id);
      this.live.get(id)?.();
    }
  }

  health(): EngineHealth {
    return this.alive ? { alive: true } : { alive: false, error: 'engine stopped' };
  }

  stats(): SchedulerStats {
    return this.options.stats ?? { numRunning: this.live.size, numWaiting: 0, kvCacheUsage: 0, numBlocks: 1, blockSize: 16 };
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

  private sleepingAt: SleepState = { sleeping: false, level: 0 };
  async sleep(level: SleepLevel): Promise<void> {
    this.sleepingAt = { sleeping: true, level };
  }
  async wakeUp(): Promise<void> {
    this.sleepingAt = { sleeping: false, level: 0 };
  }
  sleepState(): SleepState {
    return { ...this.sleepingAt };
  }
  async resetPrefixCache(): Promise<void> {}
  /** loadLora / unloadLora calls, in order. */
  readonly loraCalls: Array<{ load: LoraRequest } | { unload: number }> = [];
  async loadLora(request: LoraRequest): Promise<void> {
    this.loraCalls.push({ load: request });
    const refusal = this.options.refuseLora?.(request);
    if (refusal) throw new Error(refusal);
  }
  async unloadLora(id: number): Promise<void> {
    this.loraCalls.push({ unload: id });
  }

}
