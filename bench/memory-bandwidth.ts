// `node dist/bench/memory-bandwidth.js [model.gguf ...]`: the memory-bandwidth ceiling on
// single-stream decode. A batch-1 decode step reads every weight once (the token-embedding table
// only for its one row, unless the output head is tied to it), so no engine can run a step in
// less than (weight bytes read per step) / (read bandwidth). The script measures the machine's
// read bandwidth with 1..N threads (bench/memory-bandwidth.c, built here with cc) and prints, for
// each GGUF model, the bytes a step reads, the shortest possible step and the tokens/s ceiling.
// Compare those with the serve bench's TPOT for ortllm and llama-server: a peer already near the
// ceiling cannot be beaten by much at one stream. Prints figures, asserts nothing.
// Default models: stories260K from ../shared/models and the serve bench's cached 100M / 1.1B files.

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { readGgufFile } from '../src/model/gguf/gguf-file';
import { benchCacheDir as cacheDir, buildCProbe, repoRoot } from './c-probe';

const bufferMiB = 1024;

function readBandwidthGBs(binary: string, threads: number): number {
  const [gbs] = execFileSync(binary, [String(threads), String(bufferMiB)], { encoding: 'utf8' }).trim().split(' ');
  return Number(gbs);
}

/** Bytes one batch-1 decode step reads: every tensor, less the embedding table when the head is separate. */
async function decodeStepBytes(path: string): Promise<number> {
  const file = await readGgufFile(path);
  const hasHead = file.tensors.some((t) => t.name === 'output.weight');
  return file.tensors.filter((t) => !(hasHead && t.name === 'token_embd.weight')).reduce((sum, t) => sum + t.byteLength, 0);
}

async function main(): Promise<void> {
  const given = process.argv.slice(2);
  const models = given.length > 0
    ? given
    : [join(repoRoot, '..', 'shared', 'models', 'stories260K.gguf'), join(cacheDir, 'bench-100m-q8_0-v2.gguf'), join(cacheDir, 'bench-1b-q8_0-v2.gguf')].filter((p) => existsSync(p));
  const binary = buildCProbe('memory-bandwidth', ['-O3', '-march=native']);
  const cores = availableParallelism();
  const bandwidth = new Map<number, number>();
  console.log(`read bandwidth, ${bufferMiB} MiB buffer, best of 3`);
  for (let threads = 1; threads <= cores; threads++) {
    bandwidth.set(threads, readBandwidthGBs(binary, threads));
    console.log(`  ${threads} thread(s): ${bandwidth.get(threads)!.toFixed(1)} GB/s`);
  }
  const best = Math.max(...bandwidth.values());
  console.log(`\nmodel                          MB/step   min step ms   max tok/s (one stream, ${best.toFixed(1)} GB/s)`);
  for (const path of models) {
    const bytes = await decodeStepBytes(path);
    const name = path.split('/').pop()!;
    console.log(`${name.padEnd(30)} ${(bytes / 1e6).toFixed(1).padStart(8)}   ${((bytes / (best * 1e9)) * 1e3).toFixed(3).padStart(11)}   ${((best * 1e9) / bytes).toFixed(1).padStart(9)}`);
  }
  console.log('A model that fits in the last-level cache (stories260K) is not bound by this ceiling.');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
