// EngineService: the one Nest provider in front of the engine (DESIGN "the only door").
// It delegates to an EngineClient built by createEngine() and shuts it down after the HTTP
// server has stopped accepting and drained (onApplicationShutdown runs after the adapter closes).

import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type {
  EncodeRequest,
  EngineClient,
  EngineHealth,
  EngineRequest,
  IterationStats,
  PoolingRequestOutput,
  RequestOutput,
  SchedulerStats,
  SequenceReservation,
  SleepLevel,
  SleepMode,
  SleepState,
} from '../../engine/types';

export class EngineService implements EngineClient, OnApplicationShutdown {
  private readonly logger = new Logger('EngineService');
  private stopped = false;

  constructor(private readonly client: EngineClient) {}

  get modelConfig(): EngineClient['modelConfig'] {
    return this.client.modelConfig;
  }
  get maxModelLen(): number {
    return this.client.maxModelLen;
  }
  get maxNumSeqs(): number {
    return this.client.maxNumSeqs;
  }
  get tokenizer(): EngineClient['tokenizer'] {
    return this.client.tokenizer;
  }
  get chatTemplate(): EngineClient['chatTemplate'] {
    return this.client.chatTemplate;
  }
  get text(): EngineClient['text'] {
    return this.client.text;
  }
  get eosTokenIds(): number[] {
    return this.client.eosTokenIds;
  }
  get generationDefaults(): EngineClient['generationDefaults'] {
    return this.client.generationDefaults;
  }
  get audioFeatures(): EngineClient['audioFeatures'] {
    return this.client.audioFeatures;
  }

  ensureCapacity(sequences: number, param?: string | null): void {
    this.client.ensureCapacity(sequences, param);
  }

  reserve(sequences: number, param?: string | null): SequenceReservation {
    return this.client.reserve(sequences, param);
  }

  get modelOutput(): EngineClient['modelOutput'] {
    return this.client.modelOutput;
  }
  get pooler(): EngineClient['pooler'] {
    return this.client.pooler;
  }

  generate(request: EngineRequest, signal?: AbortSignal, reservation?: SequenceReservation): AsyncIterable<RequestOutput> {
    return this.client.generate(request, signal, reservation);
  }

  encode(request: EncodeRequest, signal?: AbortSignal, reservation?: SequenceReservation): Promise<PoolingRequestOutput> {
    return this.client.encode(request, signal, reservation);
  }

  abort(requestIds: string[]): void {
    this.client.abort(requestIds);
  }

  health(): EngineHealth {
    return this.client.health();
  }

  stats(): SchedulerStats {
    return this.client.stats();
  }

  onIteration(listener: (stats: IterationStats) => void): () => void {
    return this.client.onIteration(listener);
  }

  sleep(level: SleepLevel, mode: SleepMode): Promise<void> {
    return this.client.sleep(level, mode);
  }

  wakeUp(): Promise<void> {
    return this.client.wakeUp();
  }

  sleepState(): SleepState {
    return this.client.sleepState();
  }

  resetPrefixCache(): Promise<void> {
    return this.client.resetPrefixCache();
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.client.shutdown();
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.shutdown();
    } catch (err) {
      this.logger.error(`engine shutdown failed: ${(err as Error).message}`);
    }
  }
}
