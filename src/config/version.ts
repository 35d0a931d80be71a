// The package version (GET /version, OpenAPI info.version). Read at run time so dist/ and
// ts sources (tests) agree without copying package.json into the build.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

function findPackageVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(join(__dirname, rel), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'ortllm' && pkg.version) return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  throw new Error('ortllm package.json not found next to the sources');
}

export const ORTLLM_VERSION = findPackageVersion();
