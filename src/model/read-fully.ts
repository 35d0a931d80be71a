// Positional reads that fill a whole buffer (fs.readSync may return short counts and caps one call at 2 GiB).
import { readSync } from 'node:fs';

const MAX_READ = 1 << 30;

export function readFully(fd: number, into: Uint8Array, position: number, what: string): void {
  let done = 0;
  while (done < into.byteLength) {
    const n = readSync(fd, into, done, Math.min(MAX_READ, into.byteLength - done), position + done);
    if (n === 0) throw new Error(`${what}: file ends ${into.byteLength - done} bytes early`);
    done += n;
  }
}
