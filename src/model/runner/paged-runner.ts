// What both runners share: the paged KV cache they own, one step at a time, block copies and
// the session's release. Subclasses only turn a batch into forward passes (`runStep`).
import * as ort from 'onnxruntime-node';
import { KvBlockStore, ModelArchConfig, ModelRunner, StepResult, StepSequence } from '../types';
import { PagedKvCache } from './kv-cache';
import { refuseUnsupportedRows } from './input-embeds';

/** What a runner's sessions must offer the base: their release. */
export interface Releasable {
  release(): Promise<void>;
}

export abstract class PagedRunner<S extends Releasable = ort.InferenceSession> implements ModelRunner {
  readonly blockSize: number;
  readonly numBlocks: number;
  private busy = false;

  constructor(
    readonly config: ModelArchConfig,
    protected readonly cache: PagedKvCache,
    protected readonly session: S,
  ) {
    this.blockSize = cache.blockSize;
    this.numBlocks = cache.numBlocks;
  }

  async step(batch: readonly StepSequence[]): Promise<StepResult> {
    if (this.busy) throw new Error('ModelRunner.step called while another step is running');
    refuseUnsupportedRows(batch, this.constructor.name, { embeds: this.takesInputEmbeds, ropePositions: this.takesRopePositions, bidirectionalRuns: this.takesBidirectionalRuns });
    this.busy = true;
    try {
      return await this.runStep(batch);
    } finally {
      this.busy = false;
    }
  }

  copyBlocks(pairs: ReadonlyArray<readonly [src: number, dst: number, pool?: number]>): void {
    this.cache.copyBlocks(pairs);
  }

  get kvBlocks(): KvBlockStore {
    return this.cache;
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }

  /** Whether runStep honours StepSequence.ropePositions (M-RoPE); a runner that does not refuses them. */
  protected get takesRopePositions(): boolean {
    return false;
  }

  /** Whether runStep attends StepSequence.bidirectionalRuns both ways (others refuse them). */
  protected get takesBidirectionalRuns(): boolean {
    return false;
  }

  /** Whether runStep writes StepSequence.inputEmbeds over the embedded rows (others refuse them). */
  protected get takesInputEmbeds(): boolean {
    return false;
  }

  protected abstract runStep(batch: readonly StepSequence[]): Promise<StepResult>;
}
