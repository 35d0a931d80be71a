// The engine core's LoRA adapters (vLLM's CPU-side LRU cache of --max-cpu-loras adapters): each
// loaded adapter's weights, handed to the runner (runner.loras) while it stays loaded. An adapter
// a request names that is not loaded (never loaded, or dropped as least recently used) is loaded
// from its path in the background; its requests wait, the others keep running.

import type { DecoderArchConfig, RunnerLoras } from '../../model/types';
import type { LoraLimits, LoraWeights } from '../../model/lora/lora-weights';
import type { LoraEngineOptions, LoraRequest } from '../types';

/** Reads an adapter's files (load-lora.ts' loadLoraAdapter; tests inject their own). */
export type LoraLoader = (path: string, base: DecoderArchConfig, limits: LoraLimits) => Promise<LoraWeights>;

interface Adapter {
  request: LoraRequest;
  /** null while loading. */
  weights: LoraWeights | null;
  loading: Promise<void> | null;
  lastUsed: number;
  /** unloadLora asked for it while a request still named it: dropped once none does. */
  unloadWhenIdle: boolean;
}

export interface LoraAdapterEvents {
  /** Adapter ids named by requests in the core (running, waiting or paused): never dropped. */
  inUse(): ReadonlySet<number>;
  /** A background load finished: its requests may be scheduled now. */
  loaded(id: number): void;
  /** A background load failed: the requests naming `id` fail with `message`. */
  failed(id: number, message: string): void;
}

export class LoraAdapterStore {
  private readonly adapters = new Map<number, Adapter>();
  private clock = 0;
  private target: RunnerLoras | null;

  constructor(
    readonly options: LoraEngineOptions,
    private readonly base: DecoderArchConfig,
    target: RunnerLoras | null,
    private readonly load: LoraLoader,
    private readonly events: LoraAdapterEvents,
  ) {
    if (options.maxCpuLoras < options.maxLoras) {
      throw new Error(`max_cpu_loras (${options.maxCpuLoras}) must be >= max_loras (${options.maxLoras})`);
    }
    this.target = target;
  }

  get maxLoras(): number {
    return this.options.maxLoras;
  }

  /** Ids of the adapters loaded now (what the runner holds). */
  loadedIds(): number[] {
    return [...this.adapters.values()].filter((a) => a.weights !== null).map((a) => a.request.id);
  }

  /** Gives the adapters to a new runner (after wake_up), or to none while asleep. */
  attach(target: RunnerLoras | null): void {
    this.target = target;
    for (const a of this.adapters.values()) if (a.weights) target?.add(a.request.id, a.weights);
  }

  /**
   * True when the request's adapter is loaded (it counts as used now). Otherwise starts loading
   * it from its path once there is room under --max-cpu-loras, and answers false.
   */
  ready(request: LoraRequest): boolean {
    const adapter = this.adapters.get(request.id);
    if (adapter) {
      adapter.unloadWhenIdle = false;
      if (adapter.weights) {
        adapter.lastUsed = ++this.clock;
        return true;
      }
      return false;
    }
    if (this.hasRoom()) void this.startLoad(request).catch((err: unknown) => this.events.failed(request.id, loadFailure(request, err)));
    return false;
  }

  /** Whether an adapter is being read in the background (a step with nothing else to do waits for it). */
  get loading(): boolean {
    for (const a of this.adapters.values()) if (a.loading) return true;
    return false;
  }

  /** Settles when any background load settles. */
  anyLoadSettled(): Promise<void> {
    const loads = [...this.adapters.values()].flatMap((a) => (a.loading ? [a.loading.catch(() => {})] : []));
    return loads.length === 0 ? Promise.resolve() : Promise.race(loads);
  }

  /**
   * load_lora_adapter: reads and checks the adapter (rejects with the LoraLoadError's message) and
   * keeps it when --max-cpu-loras leaves room; else it is read again when a request names it.
   */
  async add(request: LoraRequest): Promise<void> {
    const known = this.adapters.get(request.id);
    if (known) {
      known.unloadWhenIdle = false;
      if (known.loading) await known.loading;
      return;
    }
    if (this.hasRoom()) {
      await this.startLoad(request);
      return;
    }
    await this.load(request.path, this.base, this.limits());
  }

  /**
   * unload_lora_adapter: drops the adapter now, or (while a request names it) once none does; the
   * requests already queued with it finish with it, as in vLLM. An unknown id is a no-op.
   */
  remove(id: number): void {
    const adapter = this.adapters.get(id);
    if (!adapter) return;
    if (this.events.inUse().has(id)) {
      adapter.unloadWhenIdle = true;
      return;
    }
    this.drop(adapter);
  }

  /**
   * After requests finished: drops the adapters unloadLora left for later that no request names
   * any more, and the least recently used idle ones while over --max-cpu-loras.
   */
  dropUnused(): void {
    let inUse: ReadonlySet<number> | null = null;
    for (const adapter of [...this.adapters.values()]) {
      if (!adapter.unloadWhenIdle) continue;
      inUse ??= this.events.inUse();
      if (!inUse.has(adapter.request.id)) this.drop(adapter);
    }
    if (this.adapters.size > this.options.maxCpuLoras) this.trim();
  }

  private limits(): LoraLimits {
    return { maxRank: this.options.maxRank, dtype: this.options.dtype };
  }

  private startLoad(request: LoraRequest): Promise<void> {
    const adapter: Adapter = { request, weights: null, loading: null, lastUsed: ++this.clock, unloadWhenIdle: false };
    this.adapters.set(request.id, adapter);
    adapter.loading = this.load(request.path, this.base, this.limits()).then(
      (weights) => {
        adapter.loading = null;
        if (this.adapters.get(request.id) !== adapter) return;
        adapter.weights = weights;
        this.target?.add(request.id, weights);
        this.trim();
        this.events.loaded(request.id);
      },
      (err: unknown) => {
        adapter.loading = null;
        if (this.adapters.get(request.id) === adapter) this.adapters.delete(request.id);
        throw err;
      },
    );
    return adapter.loading;
  }

  /**
   * Whether one more adapter may be read: a free place under --max-cpu-loras, or a loaded one no
   * request uses, dropped once the new one has loaded (as vLLM, so a read that fails drops nothing).
   */
  private hasRoom(): boolean {
    return this.adapters.size < this.options.maxCpuLoras || this.idleByAge().length > 0;
  }

  /** Drops the least recently used idle adapters while more than --max-cpu-loras are held. */
  private trim(): void {
    const idle = this.idleByAge();
    while (this.adapters.size > this.options.maxCpuLoras && idle.length > 0) this.drop(idle.shift()!);
  }

  /** Loaded adapters no running or waiting request names, least recently used first. */
  private idleByAge(): Adapter[] {
    const inUse = this.events.inUse();
    return [...this.adapters.values()].filter((a) => a.weights !== null && !inUse.has(a.request.id)).sort((x, y) => x.lastUsed - y.lastUsed);
  }

  private drop(adapter: Adapter): void {
    this.adapters.delete(adapter.request.id);
    if (adapter.weights) this.target?.remove(adapter.request.id);
  }
}

function loadFailure(request: LoraRequest, err: unknown): string {
  return `LoRA adapter '${request.name}' could not be loaded from ${request.path}: ${err instanceof Error ? err.message : String(err)}`;
}
