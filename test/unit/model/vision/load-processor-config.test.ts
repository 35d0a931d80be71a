// Loading a model's image processor config from a Hugging Face directory (with the counts
// config.json holds) and from a GGUF mmproj path.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gv, writeGguf } from '../../../../src/model/gguf/writer';
import { loadGgufImageProcessorConfig, loadHfImageProcessorConfig } from '../../../../src/model/vision/load-processor-config';

describe('loading image processor configs', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'vision-config-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, json: unknown) => writeFileSync(join(dir, name), JSON.stringify(json));

  it("takes LLaVA's patch size from config.json's vision_config when processor_config.json is absent", () => {
    write('preprocessor_config.json', { image_processor_type: 'CLIPImageProcessor', size: { shortest_edge: 336 }, crop_size: { height: 336, width: 336 } });
    write('config.json', { architectures: ['LlavaForConditionalGeneration'], vision_config: { patch_size: 14 } });
    expect(loadHfImageProcessorConfig(dir)).toMatchObject({ family: 'llava', patchSize: 14, cropSize: { width: 336, height: 336 } });
  });

  it("takes Gemma 3's token count from config.json's mm_tokens_per_image and passes kwargs on", () => {
    write('preprocessor_config.json', { image_processor_type: 'Gemma3ImageProcessor', size: { height: 896, width: 896 } });
    write('config.json', { mm_tokens_per_image: 256 });
    expect(loadHfImageProcessorConfig(dir)).toMatchObject({ family: 'gemma3', tokensPerImage: 256 });
    expect(() => loadHfImageProcessorConfig(dir, { do_pan_and_scan: true })).toThrow(/do_pan_and_scan/);
  });

  it('says which file is missing', () => {
    expect(() => loadHfImageProcessorConfig(dir)).toThrow(/no preprocessor_config.json/);
  });

  it('reads a GGUF mmproj by path', async () => {
    const path = join(dir, 'mmproj.gguf');
    const stats = gv.f32s([0.5, 0.5, 0.5]);
    writeGguf(path, {
      'general.architecture': gv.str('clip'), 'clip.has_vision_encoder': gv.bool(true), 'clip.projector_type': gv.str('qwen2vl_merger'),
      'clip.vision.image_size': gv.u32(560), 'clip.vision.patch_size': gv.u32(14), 'clip.vision.image_mean': stats, 'clip.vision.image_std': stats,
    }, [{ name: 'v.patch_embd.weight', shape: [2, 3], type: 'f32', data: new Float32Array(6) }]);
    expect(await loadGgufImageProcessorConfig(path, { minPixels: 3136 })).toMatchObject({ family: 'qwen2_vl', geometry: 'llama.cpp', minPixels: 3136, maxPixels: 4096 * 784 });
  });
});
