/** @jest-environment ./test/helpers/ort-environment.js */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gemmaConfigJson, randomGemmaTensors, writeGemmaHfDir } from '../../../bench/random-gemma';
import { loadModel } from '../../../src/model/load-model';
import { createRunner } from '../../../src/model/runner';
import { loadOptions } from '../../helpers/model-files';
import { referenceGemmaForward } from '../../helpers/reference-gemma';
import { BlockAllocator, maxAbsDiff, runChunked } from '../../helpers/runner-driver';
const PROMPT = [1, 17, 250, 3, 99, 400, 12, 511, 0, 42, 7, 300, 301, 5, 77, 260];
it.each([
  ['g3', gemmaConfigJson('gemma3', { sliding_window: null, rope_local_base_freq: 1000000, final_logit_softcapping: 4 }), {}],
  ['g3c', gemmaConfigJson('gemma3', { sliding_window: null, rope_local_base_freq: 1000000, rope_scaling: null }), { layout: 'conditional' as const }],
  ['g2', gemmaConfigJson('gemma2', { sliding_window: null, attn_logit_softcapping: null }), {}],
])('%s', async (name, json, opts) => {
  const dir = join(mkdtempSync(join(tmpdir(), 'g-')), name);
  const tensors = randomGemmaTensors(json, 3);
  await writeGemmaHfDir(dir, json, tensors, opts);
  const model = await loadModel(loadOptions(dir, { skipTokenizer: true }));
  console.log(JSON.stringify(model.config));
  const runner = await createRunner(model, { blockSize: 4, numBlocks: 16, device: 'cpu' });
  const got = await runChunked(runner, PROMPT, 3, new BlockAllocator(runner).table(PROMPT.length));
  const want = referenceGemmaForward(json, tensors, PROMPT);
  const d = Math.max(...got.map((g, i) => maxAbsDiff(g, want[i])));
  console.log(name, d, Math.max(...want[3].map(Math.abs)));
  await runner.dispose();
});
