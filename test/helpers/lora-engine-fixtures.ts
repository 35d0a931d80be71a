// LoRA stand-ins for engine tests: seeded random adapter weights, a loader that serves them by
// path (counting reads, failing where told), and a runner wrapper that holds adapters as
// ModelRunner.loras and records what each step ran. The wrapped runner computes the base model:
// these tests check scheduling, caching and loading, not what an adapter does to the output.

import { LORA_MODULES, LoraLoadError, type LoraModule, type LoraPair, type LoraWeights } from '../../src/model/lora/lora-weights';
import type { DecoderArchConfig, LoadedModel, ModelRunner, RunnerOptions, StepSequence } from '../../src/model/types';
import type { LoraLoader } from '../../src/engine/core/lora-adapters';

/** Deterministic uniform values in [-scale, scale). */
function seeded(seed: number, count: number, scale: number): Float32Array {
  let state = seed >>> 0 || 1;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = (state / 2 ** 32 - 0.5) * 2 * scale;
  }
  return out;
}

/** In/out features of each adapted linear of a llama-family layer. */
function linearShape(config: DecoderArchConfig, module: LoraModule): [number, number] {
  const hidden = config.hiddenSize;
  const kv = config.numKvHeads * config.headDim;
  const q = config.numHeads * config.headDim;
  switch (module) {
    case 'q_proj':
      return [hidden, q];
    case 'k_proj':
    case 'v_proj':
      return [hidden, kv];
    case 'o_proj':
      return [q, hidden];
    case 'gate_proj':
    case 'up_proj':
      return [hidden, config.intermediateSize];
    case 'down_proj':
      return [config.intermediateSize, hidden];
  }
}

/** An adapter of `rank` on all seven modules of every layer, alpha ≠ rank, from `seed`. */
export function randomLoraWeights(config: DecoderArchConfig, rank: number, alpha: number, seed: number): LoraWeights {
  const scaling = alpha / rank;
  let bytes = 0;
  const layers = Array.from({ length: config.numLayers }, (_, layer) => {
    const pairs = new Map<LoraModule, LoraPair>();
    LORA_MODULES.forEach((module, m) => {
      const [inFeatures, outFeatures] = linearShape(config, module);
      const a = seeded(seed * 1000 + layer * 10 + m, rank * inFeatures, 0.1);
      const b = seeded(seed * 1000 + layer * 10 + m + 500, outFeatures * rank, 0.1).map((v) => v * scaling);
      bytes += (a.length + b.length) * 4;
      pairs.set(module, { a, b, rank, inFeatures, outFeatures });
    });
    return pairs;
  });
  return { rank, alpha, scaling, layers, bytes };
}

/** Serves adapters by path: `ranks` maps a path to its rank; any other path fails as a missing adapter would. */
export class FakeLoraFiles {
  readonly reads: string[] = [];
  /** Resolves each read only when released (tests that watch a load in flight). */
  hold = false;
  private readonly held: Array<() => void> = [];

  constructor(private readonly ranks: Record<string, number>) {}

  readonly loader: LoraLoader = async (path, base, limits) => {
    this.reads.push(path);
    if (this.hold) await new Promise<void>((resolve) => this.held.push(resolve));
    const rank = this.ranks[path];
    if (rank === undefined) throw new LoraLoadError(`No adapter found for ${path}`);
    if (rank > limits.maxRank) throw new LoraLoadError(`LoRA rank ${rank} is greater than max_lora_rank ${limits.maxRank}.`);
    return randomLoraWeights(base, rank, rank * 2 + 1, Object.keys(this.ranks).indexOf(path) + 1);
  };

  release(): void {
    this.hold = false;
    for (const resolve of this.held.splice(0)) resolve();
  }
}

/** What a LoRA runner saw: each step's adapter ids, and every add / remove. */
export interface LoraRunnerLog {
  steps: number[][];
  events: string[];
  held: Map<number, LoraWeights>;
}

/** createRunner for CoreSeams: the real runner, with `loras` held and each step checked and recorded. */
export function recordingLoraRunner(create: (model: LoadedModel, options: RunnerOptions) => Promise<ModelRunner>, log: LoraRunnerLog) {
  return async (model: LoadedModel, options: RunnerOptions): Promise<ModelRunner> => {
    const inner = await create(model, options);
    if (!options.lora) return inner;
    const { maxLoras } = options.lora;
    const runner: ModelRunner = Object.create(inner) as ModelRunner;
    Object.defineProperty(runner, 'loras', {
      value: {
        maxLoras,
        add: (id: number, weights: LoraWeights) => {
          log.events.push(`add ${id}`);
          log.held.set(id, weights);
        },
        remove: (id: number) => {
          log.events.push(`remove ${id}`);
          log.held.delete(id);
        },
      },
    });
    runner.step = (batch: readonly StepSequence[]) => {
      const ids = [...new Set(batch.flatMap((s) => (s.lora ? [s.lora] : [])))];
      for (const id of ids) if (!log.held.has(id)) throw new Error(`step names adapter ${id}, which the runner does not hold`);
      if (ids.length > maxLoras) throw new Error(`step holds ${ids.length} adapters, more than max_loras ${maxLoras}`);
      log.steps.push(ids);
      return inner.step(batch);
    };
    return runner;
  };
}

export function emptyLoraLog(): LoraRunnerLog {
  return { steps: [], events: [], held: new Map() };
}
