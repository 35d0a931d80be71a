// `node dist/bench/gemma-decode.js [LAYERS]`: batch-1 decode step time of a Gemma-3-1B-shaped Q8_0
// GGUF (hidden 1152, 4 / 1 heads of 256, FFN 6912, window 512; LAYERS of its 26, vocabulary 32000)
// on native-q8 and on onnx-segments (MatMulNBits), after a 128-token prefill, two rounds each.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gemma3 } from '../src/model/architectures/gemma3';
import { writeModelGguf } from '../src/model/gguf/write-model';
import { loadModel } from '../src/model/load-model';
import { createRunner } from '../src/model/runner';
import type { SegmentedRunner } from '../src/model/runner/segmented-runner';
import { gemmaConfigJson, randomGemmaTensors } from './random-gemma';

const PREFILL = 128;
const STEPS = 64;

async function main(): Promise<void> {
  const layers = Number(process.argv[2] ?? '4');
  const json = gemmaConfigJson('gemma3', {
    hidden_size: 1152,
    intermediate_size: 6912,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    head_dim: 256,
    query_pre_attn_scalar: 256,
    num_hidden_layers: layers,
    vocab_size: 32000,
    sliding_window: 512,
    max_position_embeddings: 4096,
    rope_scaling: null,
  });
  const config = gemma3.hf.config(json, { source: 'bench', hasTensor: () => true });
  const h = config.hiddenSize;
  // Canonical weights: the HF norm gains w become 1 + w, as the HF loader converts them.
  const tensors = [...randomGemmaTensors(json, 1)].map(([name, values]) => {
    const norm = name.endsWith('norm.weight');
    if (norm) gemma3.hf.adjustValues!(name, config)!(values);
    const shape = norm ? [values.length] : /(o_proj|down_proj)\.weight$/.test(name) ? [h, values.length / h] : [values.length / h, h];
    return { name, shape, values: () => values };
  });
  const dir = mkdtempSync(join(tmpdir(), 'ortllm-gemma-bench-'));
  try {
    const path = join(dir, 'gemma-q8_0.gguf');
    writeModelGguf(path, config, tensors, {}, 'q8_0');
    const model = await loadModel({ model: path, loadFormat: 'auto', loadWeights: true, skipTokenizer: true, chatTemplate: null, generationConfig: 'auto' });
    const table = Array.from({ length: Math.ceil((PREFILL + STEPS) / 16) }, (_, i) => i);
    for (const nativeQ8Gemm of [true, false, true, false]) {
      const runner = (await createRunner(model, { blockSize: 16, numBlocks: table.length, device: 'cpu', nativeQ8Gemm })) as SegmentedRunner;
      await runner.step([{ tokens: Array.from({ length: PREFILL }, (_, i) => 3 + i), positionOffset: 0, blockTable: table }]);
      const start = process.hrtime.bigint();
      for (let i = 0; i < STEPS; i++) await runner.step([{ tokens: [5 + i], positionOffset: PREFILL + i, blockTable: table }]);
      const ms = Number(process.hrtime.bigint() - start) / 1e6 / STEPS;
      console.log(`${runner.backendName}: ${ms.toFixed(2)} ms per decode step (batch 1, ${layers} layers, context ${PREFILL}..${PREFILL + STEPS})`);
      await runner.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
