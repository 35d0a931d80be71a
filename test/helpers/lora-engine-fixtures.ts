// LoRA helpers for engine tests: seeded PEFT adapters written to disk and read by the real loader
// (each read counted, and held back when a test watches a load in flight), and a runner wrapper
// that passes adapters on to the runner's own `loras` while recording what each step ran.

import { join } from 'node:path';
import { loadLoraAdapter } from '../../src/model/lora/load-lora';
import { LORA_MODULES } from '../../src/model/lora/lora-weights';
import { writeRandomPeftAdapter } from '../../src/model/lora/write-adapter';
import type { DecoderArchConfig, LoadedModel, ModelRunner, RunnerOptions, StepSequence } from '../../src/model/types';
import type { LoraLoader } from '../../src/engine/core/lora-adapters';
import type { LoraRequest } from '../../src/engine/types';

/** Writes adapter `id` (rank 8 for odd ids, 16 for even ones, alpha ≠ rank, all seven modules) under `dir`. */
export function writeTestAdapter(dir: string, config: DecoderArchConfig, id: number): LoraRequest {
  const rank = id % 2 ? 8 : 16;
  const path = join(dir, `adapter-${id}`);
  writeRandomPeftAdapter(path, config, { rank, alpha: rank * 2 + 3, seed: 100 + id, modules: LORA_MODULES });
  return { name: `ad${id}`, id, path };
}

/** The real loader, counting reads; while `hold` is set, reads wait until release(). */
export class CountingLoader {
  readonly reads: string[] = [];
  hold = false;
  private readonly held: Array<() => void> = [];

  readonly load: LoraLoader = async (path, base, limits) => {
    this.reads.push(path);
    if (this.hold) await new Promise<void>((resolve) => this.held.push(resolve));
    return loadLoraAdapter(path, base, limits);
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
}

export function emptyLoraLog(): LoraRunnerLog {
  return { steps: [], events: [] };
}

/** createRunner for CoreSeams: the real runner, its adds, removes and steps' adapters recorded. */
export function recordingLoraRunner(create: (model: LoadedModel, options: RunnerOptions) => Promise<ModelRunner>, log: LoraRunnerLog) {
  return async (model: LoadedModel, options: RunnerOptions): Promise<ModelRunner> => {
    const inner = await create(model, options);
    const loras = inner.loras;
    if (!loras) return inner;
    const runner: ModelRunner = Object.create(inner) as ModelRunner;
    Object.defineProperty(runner, 'loras', {
      value: {
        maxLoras: loras.maxLoras,
        add: (id: number, weights: Parameters<typeof loras.add>[1]) => {
          log.events.push(`add ${id}`);
          loras.add(id, weights);
        },
        remove: (id: number) => {
          log.events.push(`remove ${id}`);
          loras.remove(id);
        },
      },
    });
    runner.step = (batch: readonly StepSequence[]) => {
      log.steps.push([...new Set(batch.flatMap((s) => (s.lora ? [s.lora] : [])))]);
      return inner.step(batch);
    };
    return runner;
  };
}
