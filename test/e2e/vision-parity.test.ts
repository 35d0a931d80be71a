// bench/vision-parity.ts against a real llama-server (only where bench/build-llama-server.sh has
// built one), on the seeded Gemma 3 and Qwen2.5-VL GGUF pairs (float32 text model and mmproj):
// one image at the tower's native size, the same prompt ids on both sides, the same greedy ids and
// logprobs within the tolerance of each family's known llama.cpp deviation, and the script says
// so with exit status 0.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultPeer } from '../../bench/llama-parity';
import { needs } from '../helpers/needs';
import { writeQwenVlGguf } from '../helpers/qwen-vl-files';
import { ensureBuilt } from '../helpers/server';
import { STORIES, visionConfigJson, writeVisionGguf, writeVisionHfDir } from '../helpers/write-vision-models';

const root = resolve(__dirname, '../..');
const peer = defaultPeer(root);

function parity(textPath: string, tolerance: string): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [join(root, 'dist/bench/vision-parity.js'), textPath, '--peer', peer, '--tokens', '12', '--tolerance', tolerance], {
    cwd: root,
    encoding: 'utf8',
    timeout: 110_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr.slice(-2000) };
}

needs(peer, STORIES).describe('vision parity with llama-server', () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-vision-parity-'));
    await ensureBuilt();
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it(
    'Gemma 3 (bidirectional image tokens): same prompt and greedy ids, logprobs within the float16-GELU 5e-3',
    async () => {
      // A sliding window (64) that holds the image's 16 tokens: there llama.cpp's non-causal image
      // decode and transformers' mask agree (docs/vision.md); llama.cpp's float16 GELU table
      // bounds the logprobs at 5e-3 (docs/model-families-gemma.md).
      const hf = join(tmp, 'gemma3-hf');
      const textConfig = visionConfigJson('gemma3').text_config as Record<string, unknown>;
      const written = await writeVisionHfDir('gemma3', hf, { configOverrides: { text_config: { ...textConfig, sliding_window: 64 } } });
      const text = await writeVisionGguf('gemma3', hf, join(tmp, 'gemma3-gguf'), written);
      const run = parity(text, '5e-3');
      expect({ status: run.status, stderr: run.stderr, stdout: run.stdout }).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toMatch(/text ids identical/);
      expect(run.stdout).toMatch(/12\/12 greedy ids identical/);
    },
    120_000,
  );

  it(
    'Qwen2.5-VL (M-RoPE): same prompt and greedy ids, logprobs within 1e-3 (the merger GELU)',
    async () => {
      // llama.cpp's merger GELU is the tanh approximation (ggml_gelu, a float16 table on CPU);
      // transformers' PatchMerger, and ortllm, use the exact erf one (docs/vision.md).
      const { text } = await writeQwenVlGguf(join(tmp, 'qwen'), 7);
      const run = parity(text, '1e-3');
      expect({ status: run.status, stderr: run.stderr, stdout: run.stdout }).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toMatch(/text ids identical/);
      expect(run.stdout).toMatch(/12\/12 greedy ids identical/);
    },
    120_000,
  );
});
