// The tower's shape from config.json's vision_config and from an mmproj's clip.vision.* keys,
// and the settings both refuse rather than compute differently.
import type { GgufFile } from '../../../../src/model/gguf/gguf-file';
import { qwenVisionConfigFromHf, windowUnits } from '../../../../src/model/vision/qwen-vision-config';
import { qwenVisionConfigFromGguf } from '../../../../src/model/vision/qwen-vl-gguf';
import { QWEN_VL_VISION } from '../../../helpers/qwen-vl-files';

const mmproj = (metadata: Record<string, unknown>) => ({ path: 'mmproj.gguf', metadata }) as unknown as GgufFile;
const CLIP = {
  'clip.projector_type': 'qwen2.5vl_merger',
  'clip.use_silu': true,
  'clip.vision.block_count': 8,
  'clip.vision.embedding_length': 64,
  'clip.vision.attention.head_count': 4,
  'clip.vision.feed_forward_length': 96,
  'clip.vision.projection_dim': 128,
  'clip.vision.patch_size': 14,
  'clip.vision.attention.layer_norm_epsilon': 1e-5,
  'clip.vision.n_wa_pattern': 4,
};

describe('Qwen2.5-VL vision config', () => {
  it('reads vision_config with transformers defaults', () => {
    const config = qwenVisionConfigFromHf({ ...QWEN_VL_VISION, out_hidden_size: undefined, window_size: undefined }, 64, 'dir');
    expect(config).toEqual({
      depth: 3, hiddenSize: 32, numHeads: 2, intermediateSize: 48, outHiddenSize: 64, patchSize: 14, temporalPatchSize: 2,
      spatialMergeSize: 2, windowSize: 112, fullAttentionBlocks: [2], normEps: 1e-6,
    });
    expect(windowUnits(config)).toBe(4);
  });

  it.each([
    ['a GELU tower (Qwen2-VL)', { hidden_act: 'quick_gelu' }, /hidden_act "quick_gelu" is not supported/],
    ['a full-attention index past the blocks', { fullatt_block_indexes: [3] }, /fullatt_block_indexes/],
    ['no full-attention list', { fullatt_block_indexes: undefined }, /fullatt_block_indexes/],
    ['a head dim the 2-D rotary cannot split', { hidden_size: 36, num_heads: 2 }, /head dim 18 must be a multiple of 4/],
    ['four channels', { in_chans: 4 }, /in_channels must be 3/],
  ])('refuses %s', (_, change, message) => {
    expect(() => qwenVisionConfigFromHf({ ...QWEN_VL_VISION, ...change }, 64, 'dir')).toThrow(message);
  });

  it("reads an mmproj, its n_wa_pattern as llama.cpp's every n-th block", () => {
    const config = qwenVisionConfigFromGguf(mmproj(CLIP));
    expect(config).toMatchObject({ depth: 8, hiddenSize: 64, numHeads: 4, intermediateSize: 96, outHiddenSize: 128, normEps: 1e-5, windowSize: 112, spatialMergeSize: 2 });
    expect(config.fullAttentionBlocks).toEqual([3, 7]);
    expect(qwenVisionConfigFromGguf(mmproj({ ...CLIP, 'clip.vision.n_wa_pattern': 0 })).fullAttentionBlocks).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it.each([
    ["Qwen2-VL's projector", { 'clip.projector_type': 'qwen2vl_merger' }, /'qwen2vl_merger' is not Qwen2.5-VL's tower/],
    ['a GELU MLP', { 'clip.use_silu': false }, /clip.use_silu is not true/],
    ['no window pattern', { 'clip.vision.n_wa_pattern': undefined }, /n_wa_pattern must be a non-negative integer/],
  ])('refuses an mmproj with %s', (_, change, message) => {
    expect(() => qwenVisionConfigFromGguf(mmproj({ ...CLIP, ...change }))).toThrow(message);
  });
});
