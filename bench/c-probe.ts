// Builds one of the benches' small C probes (bench/<name>.c) into .bench-cache with the machine's cc.

import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const repoRoot = resolve(__dirname, '..', '..');
export const benchCacheDir = join(repoRoot, '.bench-cache');

/** Compiles bench/<name>.c with `flags` (plus -pthread) and returns the binary's path. */
export function buildCProbe(name: string, flags: string[]): string {
  mkdirSync(benchCacheDir, { recursive: true });
  const binary = join(benchCacheDir, name);
  execFileSync('cc', [...flags, '-pthread', '-o', binary, join(repoRoot, 'bench', `${name}.c`)], { stdio: 'inherit' });
  return binary;
}
