// Test tools written in Go (test/fixtures/<name>/main.go), built with Debian's toolchain by
// scripts/go-build.js into .cache/go-tools/.
import { join } from 'node:path';
import { goBuild } from '../../scripts/go-build';
import { REPO_ROOT } from './server';

export { debianGoPackage } from '../../scripts/go-build';
export const GO_BINARY = '/usr/bin/go';

/** Compiles the Go program in `dir` (again only when a source changed) and returns the binary's path. */
export function buildGoTool(dir: string): string {
  return goBuild(dir, join(REPO_ROOT, '.cache', 'go-tools', dir.split('/').pop() as string));
}
