// bench/llama-parity.ts against a real llama-server (only where bench/build-llama-server.sh has
// built one): float32 GGUFs give llama.cpp's greedy ids and its logprobs within 1e-4, and the
// script says so with exit status 0.
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { defaultPeer } from '../../bench/llama-parity';
import { sharedModel } from '../helpers/model-files';
import { needs } from '../helpers/needs';
import { ensureBuilt } from '../helpers/server';

const root = resolve(__dirname, '../..');
const peer = defaultPeer(root);
const files = [sharedModel('stories260K.gguf'), sharedModel('rand256.gguf')];

needs(peer, ...files).it(
  'ortllm matches llama-server on float32 GGUFs: same greedy ids, logprobs within 1e-4',
  async () => {
    await ensureBuilt();
    const run = spawnSync(process.execPath, [join(root, 'dist/bench/llama-parity.js'), ...files, '--peer', peer, '--tokens', '16'], { cwd: root, encoding: 'utf8', timeout: 170_000 });
    expect({ status: run.status, stderr: run.stderr.slice(-2000) }).toEqual({ status: 0, stderr: '' });
    const lines = run.stdout.trim().split('\n');
    expect(lines.filter((l) => /16\/16 greedy ids identical/.test(l))).toHaveLength(10);
    expect(lines[lines.length - 1]).toBe('parity: ok');
  },
  180_000,
);
