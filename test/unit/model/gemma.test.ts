/** @jest-environment ./test/helpers/ort-environment.js */
// gemma2 / gemma3 from Hugging Face directories in the real layouts and from their GGUF
// conversions, through the segmented runner, against the float64 reference read straight from
// config.json and the HF tensors (test/helpers/reference-gemma.ts). The window is shorter than the
// prompt, so sliding and global layers differ.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gemmaConfigJson, randomGemmaTensors, writeGemmaGguf, writeGemmaHfDir, type WriteGemmaDirOptions } from '../../../bench/random-gemma';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { SegmentedRunner } from '../../../src/model/runner/segmented-runner';
import type { DecoderArchConfig, LoadedModel } from '../../../src/model/types';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceGemmaForward } from '../../helpers/reference-gemma';
import { BlockAllocator, NATIVE_ADDON, rowsRelativeDiff, runChunked } from '../../helpers/runner-driver';

const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301, 5, 77, 260];
const STORIES = sharedModel('stories260K.gguf');

let tmp: string;
beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-gemma-'))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function load(path: string): Promise<LoadedModel> {
  return loadModel(loadOptions(path, { skipTokenizer: true }));
}

/** Logits of every PROMPT position, fed in chunks of `chunk` (prefill chunks and, at 1, decodes), on `backend`. */
async function promptLogits(model: LoadedModel, chunk: number, backend = 'onnx-segments'): Promise<Float32Array[]> {
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu', nativeQ8Gemm: backend === 'native-q8' });
  try {
    expect((runner as SegmentedRunner).backendName).toBe(backend);
    return await runChunked(runner, PROMPT, chunk, new BlockAllocator(runner).table(PROMPT.length));
  } finally {
    await runner.dispose();
  }
}


const CASES: Array<[string, Record<string, unknown>, WriteGemmaDirOptions]> = [
  ['gemma3 (Gemma3ForCausalLM), 5:1 layers, linear RoPE scaling on the global one', gemmaConfigJson('gemma3'), {}],
  ['gemma3 text tower of Gemma3ForConditionalGeneration, final soft-cap', gemmaConfigJson('gemma3', { final_logit_softcapping: 4.0 }), { layout: 'conditional' }],
  [
    'gemma3 with layer_types, rope_parameters and query_pre_attn_scalar != head_dim',
    gemmaConfigJson('gemma3', {
      num_hidden_layers: 3,
      query_pre_attn_scalar: 24,
      layer_types: ['full_attention', 'sliding_attention', 'full_attention'],
      rope_parameters: { full_attention: { rope_type: 'linear', factor: 2.0, rope_theta: 500000 }, sliding_attention: { rope_type: 'default', rope_theta: 20000 } },
      rope_scaling: undefined,
      rope_theta: undefined,
      rope_local_base_freq: undefined,
    }),
    {},
  ],
  ['gemma2, attention and final soft-caps, even layers sliding', gemmaConfigJson('gemma2'), {}],
];

needs(NATIVE_ADDON).describe('gemma through the segmented runner', () => {
  describe.each(CASES)('%s', (name, json, opts) => {
    const tensors = randomGemmaTensors(json, 11);
    const expected = referenceGemmaForward(json, tensors, PROMPT);
    let dir: string;
    beforeAll(async () => {
      dir = join(tmp, name.replace(/\W+/g, '-'));
      await writeGemmaHfDir(dir, json, tensors, opts);
    });

    it('matches the float64 reference at every position, in one prefill and in decode steps', async () => {
      const model = await load(dir);
      expect(rowsRelativeDiff(await promptLogits(model, PROMPT.length), expected)).toBeLessThan(1e-4);
      expect(rowsRelativeDiff(await promptLogits(model, 1), expected)).toBeLessThan(1e-4);
    });
  });

  // A GGUF holds only llama.cpp's query scale, 1/sqrt(head_dim): the cases with that scale.
  const convertible = CASES.filter(([, json]) => json.query_pre_attn_scalar === json.head_dim);
  for (const [name, json, opts] of convertible) {
    needs(STORIES).it(`${name}: the HF directory and its GGUF conversion give the same config and logits`, async () => {
      const dir = join(tmp, `gguf-${name.replace(/\W+/g, '-')}`);
      await writeGemmaHfDir(dir, json, randomGemmaTensors(json, 5), opts);
      const gguf = join(tmp, `${name.replace(/\W+/g, '-')}.gguf`);
      await writeGemmaGguf(dir, gguf, STORIES);
      const fromHf = await load(dir);
      const fromGguf = await load(gguf);
      // GGUF stores rms_norm_eps as a float32.
      const { rmsNormEps: hfEps, ...hfConfig } = fromHf.config as DecoderArchConfig;
      const { rmsNormEps: ggufEps, ...ggufConfig } = fromGguf.config as DecoderArchConfig;
      expect(ggufConfig).toEqual(hfConfig);
      expect(ggufEps).toBe(Math.fround(hfEps));
      const [a, b] = [await promptLogits(fromHf, 4), await promptLogits(fromGguf, 4)];
      expect(rowsRelativeDiff(b, a)).toBeLessThan(1e-6);
    });
  }

  // Q8_0 weights and int8 activations: as close to the float64 reference as that noise lets either backend be.
  const q8 = nativeKernels()?.q8Available ? needs(STORIES) : needs(STORIES, 'a CPU with AVX512-VNNI or AVX2 (native-q8)');
  for (const [name, json, opts] of convertible) {
    q8.it(`${name}: a Q8_0 GGUF on native-q8 (sandwich norms, GELU, soft-caps in the addon path)`, async () => {
      const dir = join(tmp, `q8-${name.replace(/\W+/g, '-')}`);
      const tensors = randomGemmaTensors(json, 9);
      await writeGemmaHfDir(dir, json, tensors, opts);
      const gguf = `${dir}.gguf`;
      await writeGemmaGguf(dir, gguf, STORIES, 'q8_0');
      const model = await load(gguf);
      const expected = referenceGemmaForward(json, tensors, PROMPT);
      const addon = rowsRelativeDiff(await promptLogits(model, 5, 'native-q8'), expected);
      // The same file on onnx-segments (MatMulNBits) is the yardstick of the quantization noise
      // (~1-5% of the largest logit here: Q8_0 embedding and head, logits soft-capped at 3-4).
      const segments = rowsRelativeDiff(await promptLogits(model, 5), expected);
      expect(segments).toBeLessThan(0.08);
      expect(addon).toBeLessThan(1.25 * segments + 1e-3);
    });
  }
});
