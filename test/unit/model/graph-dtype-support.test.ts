/** @jest-environment ./test/helpers/ort-environment.js */
// --dtype float16 is applied where an architecture builds that graph kind in half precision
// (decoder generation) and refused at startup, naming the graph and the way out, everywhere else
// (pooling graphs of every family, Whisper's transcription graphs): never silently float32.
import type { GraphKind } from '../../../src/model/architectures/architecture';
import { ARCHITECTURES, graphDtypeFor } from '../../../src/model/architectures/registry';
import { loadModel } from '../../../src/model/load-model';
import { createPoolingRunner } from '../../../src/model/runner/pooling-runner';
import type { ModelArchConfig } from '../../../src/model/types';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';

const configOf = (architecture: string) => ({ architecture }) as ModelArchConfig;

describe('graphDtypeFor', () => {
  it('builds every graph kind of every architecture in float32 (auto, float32, or no flag)', () => {
    for (const arch of ARCHITECTURES) {
      for (const kind of Object.keys(arch.graphs) as GraphKind[]) {
        for (const dtype of ['auto', 'float32', undefined] as const) expect(graphDtypeFor(configOf(arch.name), kind, dtype)).toBe('float32');
      }
    }
  });

  it('applies float16 to decoder generation graphs', () => {
    expect(graphDtypeFor(configOf('llama'), 'causalLm', 'float16')).toBe('float16');
    expect(graphDtypeFor(configOf('qwen2'), 'causalLm', 'float16')).toBe('float16');
  });

  it.each([
    ['bert', 'pooling', /^--dtype float16: bert graphs for pooling \(embeddings, classification, scoring\) compute in float32 only; start with --dtype auto/],
    ['xlm-roberta', 'pooling', /xlm-roberta graphs for pooling .* float32 only/],
    ['llama', 'pooling', /llama graphs for pooling .* float32 only/],
    ['qwen2', 'pooling', /qwen2 graphs for pooling .* float32 only/],
    ['whisper', 'encoderDecoder', /^--dtype float16: whisper graphs for transcription compute in float32 only/],
  ] as const)('refuses float16 for %s %s graphs', (architecture, kind, message) => {
    expect(() => graphDtypeFor(configOf(architecture), kind, 'float16')).toThrow(message);
  });
});

const stories = sharedModel('stories260K.gguf');

needs(stories).describe('createPoolingRunner with --dtype', () => {
  it('refuses float16 for a decoder served as an embedder, and builds with auto', async () => {
    const model = await loadModel({ ...loadOptions(stories), serving: { runner: 'auto', convert: 'embed', poolerConfig: null } });
    await expect(createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1, dtype: 'float16' })).rejects.toThrow(/llama graphs for pooling .* float32 only/);
    const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1, dtype: 'auto' });
    try {
      expect((await runner.encode([{ tokens: [1, 403, 105] }]))[0].length).toBe(model.config.hiddenSize);
    } finally {
      await runner.dispose();
    }
  });
});
