// Builds a Go program kept in the repository (test tooling, e.g. the endpoint picker's metrics
// scraper) with Debian's Go toolchain and its packaged libraries under /usr/share/gocode, in
// GOPATH mode, so nothing is downloaded. The binary is cached by a hash of the sources.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

export const GO_BINARY = '/usr/bin/go';
const GO_PATH = '/usr/share/gocode';

/** Where Debian installs the Go package `importPath` (for needs(): the test skips, naming it, when absent). */
export function debianGoPackage(importPath: string): string {
  return join(GO_PATH, 'src', importPath);
}

/** Compiles the Go program in `dir` (once per content) and returns the binary's path. */
export function buildGoTool(dir: string): string {
  const sources = readdirSync(dir).filter((f) => f.endsWith('.go')).sort();
  const digest = createHash('sha256');
  for (const file of sources) digest.update(file).update(readFileSync(join(dir, file)));
  const outDir = join(tmpdir(), 'ortllm-go-tools');
  const binary = join(outDir, `${basename(dir)}-${digest.digest('hex').slice(0, 12)}`);
  if (existsSync(binary)) return binary;
  mkdirSync(outDir, { recursive: true });
  execFileSync(GO_BINARY, ['build', '-o', binary, '.'], {
    cwd: dir,
    env: { ...process.env, GO111MODULE: 'off', GOPATH: GO_PATH, GOCACHE: join(outDir, 'cache'), GOFLAGS: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return binary;
}
