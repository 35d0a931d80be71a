// --kv-cache-dtype auto = the model's data type (vLLM's meaning): what each model format declares,
// and the float32 fallback (logged) where the runner reads only float32.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig, randomModel } from '../../../bench/random-llama';
import { loadModel } from '../../../src/model/load-model';
import { resolveKvCacheDtype } from '../../../src/model/runner';
import { hfCheckpointKvDtype } from '../../../src/model/runner/kv-dtype';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { writeHfDirFromGguf } from '../../helpers/write-hf-dir';

const STORIES = sharedModel('stories260K.gguf');

describe('--kv-cache-dtype auto', () => {
  it('reads a Hugging Face config.json dtype (transformers >= 4.56) or torch_dtype', () => {
    expect(hfCheckpointKvDtype({ torch_dtype: 'bfloat16' })).toBe('bfloat16');
    expect(hfCheckpointKvDtype({ torch_dtype: 'float16' })).toBe('float16');
    expect(hfCheckpointKvDtype({ dtype: 'float32', torch_dtype: 'float16' })).toBe('float32');
    expect(hfCheckpointKvDtype({ torch_dtype: 'torch.float16' })).toBe('float16');
    expect(hfCheckpointKvDtype({})).toBeNull();
    expect(hfCheckpointKvDtype({ torch_dtype: 'int8' })).toBeNull();
  });

  needs(STORIES).it('follows the model: GGUF -> float16 (llama.cpp cache type f16), a Hugging Face directory -> its dtype', async () => {
    const gguf = await loadModel(loadOptions(STORIES, { loadWeights: false }));
    expect(gguf.kvCacheAutoDtype).toBe('float16');
    const dir = mkdtempSync(join(tmpdir(), 'kv-auto-'));
    try {
      await writeHfDirFromGguf(STORIES, dir);
      const configPath = join(dir, 'config.json');
      const declared = async (fields: object) => {
        writeFileSync(configPath, JSON.stringify({ ...JSON.parse(readFileSync(configPath, 'utf8')), ...fields }));
        return (await loadModel(loadOptions(dir, { loadWeights: false }))).kvCacheAutoDtype;
      };
      expect(await declared({ torch_dtype: 'bfloat16' })).toBe('bfloat16');
      expect(await declared({ torch_dtype: 'float32' })).toBe('float32');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const model = { ...randomModel(llamaConfig({ hiddenSize: 64, intermediateSize: 96, numLayers: 1, numHeads: 4, numKvHeads: 2 }), 1), kvCacheAutoDtype: 'float16' as const };

  it('keeps an explicit type and stores float32 for a model that declares none', () => {
    const log = jest.fn();
    expect(resolveKvCacheDtype(model, 'bfloat16', undefined, log)).toBe('bfloat16');
    expect(resolveKvCacheDtype(model, 'float32', undefined, log)).toBe('float32');
    expect(resolveKvCacheDtype({ ...model, kvCacheAutoDtype: undefined }, 'auto', undefined, log)).toBe('float32');
    expect(log).not.toHaveBeenCalled();
  });

  it('stores float32, saying why once, where the runner reads only float32', () => {
    const log = jest.fn();
    expect(resolveKvCacheDtype(model, 'auto', 'graph', log)).toBe('float32');
    expect(log.mock.calls).toEqual([[expect.stringMatching(/auto: the KV cache stores float32, not the model's float16: attention runs inside the graph/)]]);
    expect(resolveKvCacheDtype({ ...model, weights: null }, 'auto', undefined, jest.fn())).toBe('float32');
  });

  it('stores the model type with the native addon, float32 without it (logged)', () => {
    const log = jest.fn();
    const built = nativeKernels() !== null;
    expect(resolveKvCacheDtype(model, 'auto', undefined, log)).toBe(built ? 'float16' : 'float32');
    expect(log).toHaveBeenCalledTimes(built ? 0 : 1);
    jest.isolateModules(() => {
      jest.doMock('../../../src/model/runner/native-kernels', () => ({ nativeKernels: () => null, nativeKernelsUnavailable: () => 'the addon is not built' }));
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { resolveKvCacheDtype: withoutAddon } = require('../../../src/model/runner') as typeof import('../../../src/model/runner');
      const noAddonLog = jest.fn();
      expect(withoutAddon(model, 'auto', undefined, noAddonLog)).toBe('float32');
      expect(noAddonLog.mock.calls).toEqual([[expect.stringMatching(/the native attention addon is not available \(the addon is not built\)/)]]);
    });
  });
});
