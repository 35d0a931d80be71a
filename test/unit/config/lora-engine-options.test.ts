// --enable-lora and its flags reach the engine as EngineOptions.lora (vLLM's LoRAConfig:
// --max-cpu-loras defaults to --max-loras); without --enable-lora there is no lora option.

import { toEngineOptions } from '../../../src/config/engine-args';
import { resolveServerConfig } from '../../../src/config/server-config';

describe('EngineOptions.lora', () => {
  it("takes vLLM's defaults: one adapter a step, rank 16, --max-cpu-loras = --max-loras, auto dtype", () => {
    expect(toEngineOptions(resolveServerConfig({ enableLora: true }, {})).lora).toEqual({ maxLoras: 1, maxRank: 16, maxCpuLoras: 1, dtype: 'auto' });
  });

  it('carries the flags as given', () => {
    const config = resolveServerConfig({ enableLora: true, maxLoras: 4, maxLoraRank: 64, maxCpuLoras: 8, loraDtype: 'bfloat16' }, {});
    expect(toEngineOptions(config).lora).toEqual({ maxLoras: 4, maxRank: 64, maxCpuLoras: 8, dtype: 'bfloat16' });
  });

  it('is absent without --enable-lora (the LoRA limits then mean nothing)', () => {
    expect(toEngineOptions(resolveServerConfig({ maxLoras: 4 }, {})).lora).toBeUndefined();
  });
});
