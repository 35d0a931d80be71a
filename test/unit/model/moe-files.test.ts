/** @jest-environment ./test/helpers/ort-environment.js */
// Mixtral and Qwen3-MoE checkpoints as they ship: an HF directory (one tensor per expert under
// the family's names, config.json's MoE keys) read into stacked experts, against the float64
// reference; its GGUF conversion (llama / qwen3moe with ffn_*_exps 3-D tensors and an F32
// ffn_gate_inp) giving the same logits; Q8_0 experts on native-q8.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { llamaConfig } from '../../../bench/random-llama';
import { readGgufFile } from '../../../src/model/gguf/gguf-file';
import { loadModel } from '../../../src/model/load-model';
import { nativeKernels } from '../../../src/model/runner/native-kernels';
import type { DecoderArchConfig, LoadedModel } from '../../../src/model/types';
import { loadOptions } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceMoeForward } from '../../helpers/reference-moe';
import { promptLogits, worstRelative } from '../../helpers/prompt-logits';
import { NATIVE_ADDON } from '../../helpers/runner-driver';
import { convertToGguf, STORIES } from '../../helpers/write-decoder-files';
import { moeConfigJson, writeMoeHfDir, type MoeLayout } from '../../helpers/write-moe-files';

const q8It = nativeKernels()?.q8Available ? it : it.skip;
const PROMPT = [1, 77, 301, 12, 45, 9, 260, 33, 18, 400, 5];
const SHAPE: Partial<DecoderArchConfig> = { hiddenSize: 64, numLayers: 3, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 512, rmsNormEps: 1e-5, maxPositionEmbeddings: 4096, tieWordEmbeddings: false };

const FAMILIES: Array<{ layout: MoeLayout; config: DecoderArchConfig; gguf: string }> = [
  { layout: 'mixtral', gguf: 'llama', config: llamaConfig({ ...SHAPE, intermediateSize: 32, numExperts: 4, numExpertsPerToken: 2, expertIntermediateSize: 32, normTopKProb: true }) },
  {
    layout: 'qwen3moe',
    gguf: 'qwen3moe',
    // head_dim 32 with 4 heads of hidden 64 (Qwen3's own head_dim), layer 1 dense (mlp_only_layers).
    config: llamaConfig({ ...SHAPE, architecture: 'qwen3moe', qkNorm: true, headDim: 32, ropeTheta: 1e6, intermediateSize: 96, numExperts: 8, numExpertsPerToken: 3, expertIntermediateSize: 32, normTopKProb: true, denseLayers: [1] }),
  },
];

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-moe-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

for (const { layout, config, gguf } of FAMILIES) {
  needs(STORIES, NATIVE_ADDON).describe(`${layout}: HF directory and its GGUF conversion`, () => {
    let hf: LoadedModel;
    let hfLogits: Float32Array[];
    beforeAll(async () => {
      await writeMoeHfDir(join(dir, layout), config, layout, 41);
      hf = await loadModel(loadOptions(join(dir, layout)));
      hfLogits = await promptLogits(hf, PROMPT, { backend: 'onnx-segments' });
    });

    it('reads config.json and stacks the per-expert tensors [experts, out, in]', () => {
      const { architecture, numExperts, numExpertsPerToken, expertIntermediateSize, normTopKProb, denseLayers, qkNorm } = config;
      expect(hf.config).toMatchObject({ architecture, numExperts, numExpertsPerToken, expertIntermediateSize, normTopKProb, ...(qkNorm ? { qkNorm } : {}) });
      expect((hf.config as DecoderArchConfig).denseLayers).toEqual(denseLayers);
      expect(hf.weights!.get('model.layers.0.mlp.experts.down_proj.weight').shape).toEqual([numExperts, 64, expertIntermediateSize]);
      expect(hf.weights!.get('model.layers.2.mlp.gate.weight').shape).toEqual([numExperts, 64]);
    });

    it('matches the float64 reference forward', () => {
      expect(worstRelative(hfLogits, referenceMoeForward(hf.config, hf.weights!, PROMPT))).toBeLessThan(1e-4);
    });

    it(`the GGUF conversion (${gguf}, ffn_*_exps, F32 router) gives the same logits`, async () => {
      const path = join(dir, `${layout}-f32.gguf`);
      await convertToGguf(hf, path);
      const file = await readGgufFile(path);
      expect(file.metadata[`${gguf}.expert_count`]).toBe(config.numExperts);
      expect(file.tensors.find((t) => t.name === 'blk.0.ffn_gate_exps.weight')!.ggmlShape.map(Number)).toEqual([64, config.expertIntermediateSize, config.numExperts]);
      const model = await loadModel(loadOptions(path));
      expect(model.config).toMatchObject({ architecture: config.architecture, numExperts: config.numExperts, numExpertsPerToken: config.numExpertsPerToken, expertIntermediateSize: config.expertIntermediateSize });
      expect((model.config as DecoderArchConfig).denseLayers).toEqual(config.denseLayers);
      expect(worstRelative(await promptLogits(model, PROMPT, { backend: 'onnx-segments' }), hfLogits)).toBeLessThan(1e-5);
    });

    q8It('Q8_0 GGUF (router kept F32) runs on native-q8 within int8 noise of the directory', async () => {
      const path = join(dir, `${layout}-q8.gguf`);
      await convertToGguf(hf, path, 'q8_0');
      const file = await readGgufFile(path);
      expect(file.tensors.find((t) => t.name === 'blk.0.ffn_gate_inp.weight')!.type).toBe(0);
      expect(file.tensors.find((t) => t.name === 'blk.0.ffn_up_exps.weight')!.type).toBe(8);
      expect(worstRelative(await promptLogits(await loadModel(loadOptions(path)), PROMPT, { backend: 'native-q8', nativeQ8Gemm: true }), hfLogits)).toBeLessThan(3e-2);
    });
  });
}

needs(STORIES).it('norm_topk_prob: false survives the GGUF conversion (expert_weights_norm false)', async () => {
  const config = { ...FAMILIES[1].config, normTopKProb: false };
  await writeMoeHfDir(join(dir, 'no-norm'), config, 'qwen3moe', 43);
  const hf = await loadModel(loadOptions(join(dir, 'no-norm')));
  expect(hf.config).toMatchObject({ normTopKProb: false });
  const path = join(dir, 'no-norm.gguf');
  await convertToGguf(hf, path);
  expect((await readGgufFile(path)).metadata['qwen3moe.expert_weights_norm']).toBe(false);
  expect((await loadModel(loadOptions(path))).config).toMatchObject({ normTopKProb: false });
});

needs(STORIES).it('an HF directory with fewer experts than config.json says fails at load, naming the stack', async () => {
  const config = FAMILIES[0].config;
  const path = join(dir, 'missing-expert');
  await writeMoeHfDir(path, config, 'mixtral', 42, moeConfigJson(config, 'mixtral', { num_local_experts: 5 }));
  await expect(loadModel(loadOptions(path))).rejects.toThrow(/weight model\.layers\.0\.mlp\.gate\.weight has shape \[4,64\], the config implies \[5,64\]/);
});
