// Which families' images attend both ways in the language model (VisionModel.bidirectionalImages):
// Gemma 3 from both formats, as transformers' token_type_ids mask and llama.cpp's non-causal image
// decode do; LLaVA and Qwen2.5-VL stay causal.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../../src/model/load-model';
import { loadOptions } from '../../../helpers/model-files';
import { needs } from '../../../helpers/needs';
import { writeQwenVlHfDir } from '../../../helpers/qwen-vl-files';
import { STORIES, writeVisionGguf, writeVisionHfDir } from '../../../helpers/write-vision-models';

needs(STORIES).describe('bidirectional images per family', () => {
  let tmp: string;
  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-bidi-flag-'))));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('Gemma 3 attends an image both ways, from the HF directory and from the GGUF pair', async () => {
    const dir = join(tmp, 'gemma3');
    const written = await writeVisionHfDir('gemma3', dir);
    const gguf = await writeVisionGguf('gemma3', dir, join(tmp, 'gemma3-gguf'), written);
    expect((await loadModel(loadOptions(dir))).vision?.bidirectionalImages).toBe(true);
    expect((await loadModel(loadOptions(gguf))).vision?.bidirectionalImages).toBe(true);
  });

  it('LLaVA and Qwen2.5-VL stay causal', async () => {
    const llava = join(tmp, 'llava');
    await writeVisionHfDir('llava', llava);
    const qwen = join(tmp, 'qwen');
    await writeQwenVlHfDir(qwen, 3);
    for (const dir of [llava, qwen]) {
      const vision = (await loadModel(loadOptions(dir))).vision;
      expect(vision).toBeDefined();
      expect(vision!.bidirectionalImages).toBeUndefined();
    }
  });
});
