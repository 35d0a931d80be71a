// The `ortllm serve` command-line spellings in `--help` order, each with its ServerConfig key,
// derived from the declarations in flags.ts. The CLI builds its commander options from this
// list and the flag table of docs/serve-flags.md prints it.

import type { CliSpelling } from './flag-declaration';
import { FLAGS } from './flags';
import type { FlagKey } from './server-config';

export interface FlagSpec extends CliSpelling {
  key: FlagKey;
}

function listSpellings(): FlagSpec[] {
  const listed: FlagSpec[] = [];
  const placedLater: FlagSpec[] = [];
  for (const [key, declaration] of Object.entries(FLAGS)) {
    for (const spelling of (declaration as { cli?: readonly CliSpelling[] }).cli ?? []) {
      (spelling.listedAfter ? placedLater : listed).push({ ...spelling, key: key as FlagKey });
    }
  }
  for (const spec of placedLater) {
    const anchor = listed.findIndex((s) => s.flags === spec.listedAfter);
    if (anchor < 0) throw new Error(`${spec.flags}: listedAfter names no flag (${spec.listedAfter})`);
    listed.splice(anchor + 1, 0, spec);
  }
  return listed;
}

export const SERVER_FLAGS: readonly FlagSpec[] = listSpellings();
