/** @jest-environment ./test/helpers/ort-environment.js */
// --dtype float16 is applied where an architecture builds that graph kind in half precision
// (decoder generation) and refused at startup, naming the graph and the way out, everywhere else
// (pooling graphs of every family, Whisper's transcription graphs): never silently float32. --dtype
// bfloat16 runs BERT-style pooling models' linears in the addon's bfloat16 GEMM on CPUs with
// AVX512-BF16 and is refused, with where it runs, everywhere else.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GraphKind } from '../../../src/model/architectures/architecture';
import { ARCHITECTURES, graphDtypeFor } from '../../../src/model/architectures/registry';
import { loadModel } from '../../../src/model/load-model';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import { createPoolingRunner } from '../../../src/model/runner/pooling-runner';
import type { ModelArchConfig } from '../../../src/model/types';
import { writeEncoderDir } from '../../helpers/encoder-model';
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

  it('refuses bfloat16 for every graph kind of every architecture, saying where it runs (the pooling runner takes it before any graph)', () => {
    for (const arch of ARCHITECTURES) {
      for (const kind of Object.keys(arch.graphs) as GraphKind[]) {
        expect(() => graphDtypeFor(configOf(arch.name), kind, 'bfloat16')).toThrow(
          new RegExp(`^--dtype bfloat16: ${arch.name} graphs for .* have no bfloat16 kernels; bfloat16 runs only the linears of BERT-style encoders served for pooling`),
        );
      }
    }
  });
});

const stories = sharedModel('stories260K.gguf');

describe('createPoolingRunner with --dtype bfloat16 (BERT)', () => {
  let tmp: string;
  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-dtype-'))));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('builds on a CPU with AVX512-BF16 and refuses, saying why, on one without; refuses other devices', async () => {
    const written = writeEncoderDir(join(tmp, 'bert'), { family: 'bert', numLabels: null, hidden: 32, layers: 1, heads: 4, intermediate: 64, maxPositions: 32 }, 7);
    const model = await loadModel(loadOptions(written.dir));
    const create = (device: 'cpu' | 'cuda') => createPoolingRunner(model, { device, intraOpThreads: 1, dtype: 'bfloat16' });
    await expect(create('cuda')).rejects.toThrow(/^--dtype bfloat16: --device cuda has no bfloat16 path; bfloat16 runs only/);
    if (nativeKernels()?.bf16Available) {
      const runner = await create('cpu');
      expect((await runner.encode([{ tokens: [2, 5, 9, 3] }]))[0].length).toBe(32);
      await runner.dispose();
    } else {
      await expect(create('cpu')).rejects.toThrow(/^--dtype bfloat16: (this CPU has no AVX512-BF16|the native addon is unavailable)/);
    }
  });
});

needs(stories).describe('createPoolingRunner with --dtype', () => {
  it('refuses float16 for a decoder served as an embedder, and builds with auto', async () => {
    const model = await loadModel({ ...loadOptions(stories), serving: { runner: 'auto', convert: 'embed', poolerConfig: null } });
    await expect(createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1, dtype: 'float16' })).rejects.toThrow(/llama graphs for pooling .* float32 only/);
    await expect(createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1, dtype: 'bfloat16' })).rejects.toThrow(/^--dtype bfloat16: llama pooling graphs have no bfloat16 path; bfloat16 runs only/);
    const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 1, dtype: 'auto' });
    try {
      expect((await runner.encode([{ tokens: [1, 403, 105] }]))[0].length).toBe(model.config.hiddenSize);
    } finally {
      await runner.dispose();
    }
  });
});
