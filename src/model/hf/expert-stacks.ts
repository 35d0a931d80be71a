// HF MoE checkpoints store one tensor per expert (`…mlp.experts.{e}.up_proj.weight`); the
// canonical weights stack them per layer ([experts, out, in], moe/moe-config.ts). ExpertStacks
// groups a checkpoint's per-expert tensors to check them as stacks before anything is read, and
// `filling` copies each part into its stack as it is read, so only the stack is kept.
import { expertStackOf } from '../moe/moe-config';
import type { WeightTensor } from '../types';

interface Part {
  name: string;
  file: string;
  shape: number[];
}

export class ExpertStacks<T extends Part = Part> {
  private readonly stacks = new Map<string, T[]>();

  /** Records `tensor` under its stack when `name` is one expert's tensor; false (nothing recorded) otherwise. */
  add(name: string, tensor: T): boolean {
    const of = expertStackOf(name);
    if (!of) return false;
    const parts = this.stacks.get(of.stacked) ?? [];
    parts[of.index] = tensor;
    this.stacks.set(of.stacked, parts);
    return true;
  }

  /** The stack's shape [experts, ...one expert's]; throws for a stack with a missing or misshapen expert; undefined for other names. */
  shape(stacked: string): number[] | undefined {
    const parts = this.stacks.get(stacked);
    if (!parts) return undefined;
    for (let e = 0; e < parts.length; e++) {
      const part = parts[e];
      if (!part) throw new Error(`${parts.find((p) => p)!.file}: ${stacked} has no expert ${e} (experts 0..${parts.length - 1} stored)`);
      if (part.shape.join(',') !== parts[0].shape.join(',')) {
        throw new Error(`${part.file}: tensor ${part.name} has shape [${part.shape.join(',')}], expert 0's is [${parts[0].shape.join(',')}]`);
      }
    }
    return [parts.length, ...parts[0].shape];
  }

  entries(): Array<[string, T[]]> {
    return [...this.stacks.entries()];
  }

  /** Expert `index`'s canonical name in stack `stacked`. */
  partName(stacked: string, index: number): string {
    const at = stacked.lastIndexOf('.', stacked.length - '.weight'.length - 1);
    return `${stacked.slice(0, at)}.${index}${stacked.slice(at)}`;
  }

  partNames(): string[] {
    return this.entries().flatMap(([stacked, parts]) => parts.map((_, e) => this.partName(stacked, e)));
  }

  /**
   * A filler for stacks whose parts are the expert tensors named in `names`: `take` copies a part
   * into its stack (false for other tensors), and `set` gets each stack once its last part came.
   */
  static filling(names: readonly string[], set: (stacked: string, tensor: WeightTensor) => void) {
    const counts = new Map<string, number>();
    for (const name of names) {
      const of = expertStackOf(name);
      if (of) counts.set(of.stacked, Math.max(counts.get(of.stacked) ?? 0, of.index + 1));
    }
    const filling = new Map<string, { data: Float32Array; left: number }>();
    return {
      take(name: string, shape: readonly number[], data: Float32Array): boolean {
        const of = expertStackOf(name);
        if (!of) return false;
        const count = counts.get(of.stacked)!;
        let stack = filling.get(of.stacked);
        if (!stack) filling.set(of.stacked, (stack = { data: new Float32Array(count * data.length), left: count }));
        stack.data.set(data, of.index * data.length);
        if (--stack.left === 0) set(of.stacked, { kind: 'f32', shape: [count, ...shape], data: stack.data });
        return true;
      },
    };
  }
}
