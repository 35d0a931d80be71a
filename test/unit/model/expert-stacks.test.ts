// ExpertStacks: an HF checkpoint's per-expert tensors checked and stacked [experts, out, in].
import { ExpertStacks } from '../../../src/model/hf/expert-stacks';
import type { WeightTensor } from '../../../src/model/types';

const part = (name: string, shape = [2, 3]) => ({ name, file: 'model.safetensors', shape });

describe('ExpertStacks', () => {
  it('stacks experts in index order, whatever order they come in', () => {
    const stacks = new ExpertStacks();
    expect(stacks.add('model.layers.0.mlp.experts.1.up_proj.weight', part('b'))).toBe(true);
    expect(stacks.add('model.layers.0.mlp.experts.0.up_proj.weight', part('a'))).toBe(true);
    expect(stacks.add('model.layers.0.mlp.gate.weight', part('router'))).toBe(false);
    expect(stacks.shape('model.layers.0.mlp.experts.up_proj.weight')).toEqual([2, 2, 3]);
    expect(stacks.partNames()).toEqual(['model.layers.0.mlp.experts.0.up_proj.weight', 'model.layers.0.mlp.experts.1.up_proj.weight']);

    const got: Record<string, WeightTensor> = {};
    const filling = ExpertStacks.filling(stacks.partNames(), (name, tensor) => (got[name] = tensor));
    expect(filling.take('model.layers.0.mlp.experts.1.up_proj.weight', [2, 3], Float32Array.from([6, 7, 8, 9, 10, 11]))).toBe(true);
    expect(got['model.layers.0.mlp.experts.up_proj.weight']).toBeUndefined();
    expect(filling.take('model.layers.0.mlp.experts.0.up_proj.weight', [2, 3], Float32Array.from([0, 1, 2, 3, 4, 5]))).toBe(true);
    expect(filling.take('model.norm.weight', [3], new Float32Array(3))).toBe(false);
    const stack = got['model.layers.0.mlp.experts.up_proj.weight'];
    expect(stack.shape).toEqual([2, 2, 3]);
    expect(Array.from(stack.data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('names a missing expert and a misshapen one', () => {
    const gap = new ExpertStacks();
    gap.add('model.layers.3.mlp.experts.0.down_proj.weight', part('a'));
    gap.add('model.layers.3.mlp.experts.2.down_proj.weight', part('c'));
    expect(() => gap.shape('model.layers.3.mlp.experts.down_proj.weight')).toThrow(/model\.layers\.3\.mlp\.experts\.down_proj\.weight has no expert 1/);
    const odd = new ExpertStacks();
    odd.add('model.layers.0.mlp.experts.0.gate_proj.weight', part('a'));
    odd.add('model.layers.0.mlp.experts.1.gate_proj.weight', part('b', [3, 3]));
    expect(() => odd.shape('model.layers.0.mlp.experts.gate_proj.weight')).toThrow(/tensor b has shape \[3,3\], expert 0's is \[2,3\]/);
  });
});
