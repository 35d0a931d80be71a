import { keepCudaFloat32Exact } from '../../../src/model/runner/cuda-numerics';

describe('keepCudaFloat32Exact', () => {
  it('turns TF32 off when the environment says nothing', () => {
    const env: NodeJS.ProcessEnv = {};
    keepCudaFloat32Exact(env);
    expect(env.NVIDIA_TF32_OVERRIDE).toBe('0');
  });

  it("keeps the operator's own setting", () => {
    const env: NodeJS.ProcessEnv = { NVIDIA_TF32_OVERRIDE: '1' };
    keepCudaFloat32Exact(env);
    expect(env.NVIDIA_TF32_OVERRIDE).toBe('1');
  });
});
