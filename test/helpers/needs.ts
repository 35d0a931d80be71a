// The one way a test says what it needs from the machine (a shared model file, a browser binary).
// When something is missing, the tests are registered as skipped with the missing files in their
// title, so jest counts and lists them as skipped: never as passed without an assertion.
//
//   const STORIES = sharedModel('stories260K.gguf');
//   needs(STORIES).describe('engine on stories260K', () => { ... });
//   needs(STORIES, CHROMIUM).it('renders the page', async () => { ... });

import { existsSync } from 'node:fs';
import { relative, resolve } from 'node:path';

const REPO_ROOT = resolve(__dirname, '../..');

export interface Gate {
  /** true when every needed file exists. */
  readonly present: boolean;
  describe(name: string, fn: () => void): void;
  it(name: string, fn: jest.ProvidesCallback, timeout?: number): void;
}

const warned = new Set<string>();

/** describe / it that run when every file in `files` exists, and are skipped (saying why) otherwise. */
export function needs(...files: string[]): Gate {
  const missing = files.filter((file) => !existsSync(file));
  if (missing.length === 0) return { present: true, describe, it };
  for (const file of missing.filter((f) => !warned.has(f))) {
    warned.add(file);
    console.warn(`\n*** SKIPPING the tests that need ${file}: it is missing ***\n`);
  }
  const reason = ` [skipped: missing ${missing.map((file) => relative(REPO_ROOT, file)).join(', ')}]`;
  return {
    present: false,
    describe: (name, fn) => describe.skip(name + reason, fn),
    it: (name, fn, timeout) => it.skip(name + reason, fn, timeout),
  };
}
