// bench/llama-parity.ts on the Gemma parity files (bench/random-gemma.ts: float32 GGUF conversions,
// windows shorter than the longer prompts) against a real llama-server, only where
// bench/build-llama-server.sh has built one. Greedy ids identical; logprobs within 1e-4 where
// llama.cpp's float16 GELU table stays below that (gemma2, gemma3 with a final soft-cap), and
// within that table's own effect (5e-3, docs/model-families-gemma.md) on the peaked gemma3 model.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultPeer } from '../../bench/llama-parity';
import { PARITY_MODELS, randomGemmaTensors, writeGemmaGguf, writeGemmaHfDir } from '../../bench/random-gemma';
import { sharedModel } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { ensureBuilt } from '../helpers/server';

const root = resolve(__dirname, '../..');
const peer = defaultPeer(root);
const STORIES = sharedModel('stories260K.gguf');

needs(peer, STORIES).it(
  'gemma2 and gemma3 GGUFs give llama-server greedy ids, and its logprobs up to its float16 GELU',
  async () => {
    await ensureBuilt();
    const tmp = mkdtempSync(join(tmpdir(), 'ortllm-gemma-parity-'));
    try {
      const files = new Map<string, string>();
      for (const [i, { name, json }] of PARITY_MODELS.entries()) {
        const dir = join(tmp, name);
        await writeGemmaHfDir(dir, json, randomGemmaTensors(json, 100 + i), { tokenizerGguf: STORIES });
        files.set(name, `${dir}.gguf`);
        await writeGemmaGguf(dir, files.get(name)!, STORIES);
      }
      const parity = (names: string[], tolerance: string) =>
        spawnSync(process.execPath, [join(root, 'dist/bench/llama-parity.js'), ...names.map((n) => files.get(n)!), '--peer', peer, '--tokens', '12', '--tolerance', tolerance], {
          cwd: root,
          encoding: 'utf8',
          timeout: 170_000,
        });
      for (const [names, tolerance] of [[['gemma2', 'gemma3-softcap'], '1e-4'], [['gemma3'], '5e-3']] as const) {
        const run = parity([...names], tolerance);
        expect({ status: run.status, stderr: run.stderr.slice(-2000) }).toEqual({ status: 0, stderr: '' });
        const lines = run.stdout.trim().split('\n');
        expect(lines.filter((l) => /12\/12 greedy ids identical/.test(l))).toHaveLength(5 * names.length);
        expect(lines[lines.length - 1]).toBe('parity: ok');
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  },
  240_000,
);
