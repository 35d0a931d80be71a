// ModelWeights over an in-memory map, shared by the GGUF, safetensors and dummy loaders.
import type { ModelWeights, WeightTensor } from './types';

export class WeightMap implements ModelWeights {
  private readonly tensors = new Map<string, WeightTensor>();

  set(name: string, tensor: WeightTensor): void {
    this.tensors.set(name, tensor);
  }

  names(): string[] {
    return [...this.tensors.keys()];
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  release(name: string): void {
    this.tensors.delete(name);
  }

  get(name: string): WeightTensor {
    const tensor = this.tensors.get(name);
    if (!tensor) throw new Error(`model has no weight "${name}"`);
    return tensor;
  }
}
