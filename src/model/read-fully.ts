// Positional reads that fill a whole buffer (fs.readSync may return short counts and caps one call at 2 GiB).
import { closeSync, openSync, readSync } from 'node:fs';
import { bf16BytesToF32, f16BytesToF32 } from './gguf/half';

const MAX_READ = 1 << 30;

/** Runs `body` with the file open for reading, and closes it however `body` ends. */
export function withFile<T>(path: string, body: (fd: number) => T): T {
  const fd = openSync(path, 'r');
  try {
    return body(fd);
  } finally {
    closeSync(fd);
  }
}

export function readFully(fd: number, into: Uint8Array, position: number, what: string): void {
  let done = 0;
  while (done < into.byteLength) {
    const n = readSync(fd, into, done, Math.min(MAX_READ, into.byteLength - done), position + done);
    if (n === 0) throw new Error(`${what}: file ends ${into.byteLength - done} bytes early`);
    done += n;
  }
}

/**
 * Reads `count` floats stored as F32/F16/BF16 into one new Float32Array. F32 lands in place;
 * F16/BF16 go through a scratch buffer that lives only while this one tensor converts.
 */
export function readFloatsAsF32(
  fd: number,
  at: { offset: number; byteLength: number; count: number; dtype: 'F32' | 'F16' | 'BF16' },
  what: string,
): Float32Array {
  if (at.dtype === 'F32') {
    const data = new Float32Array(at.count);
    readFully(fd, new Uint8Array(data.buffer), at.offset, what);
    return data;
  }
  const raw = new Uint8Array(at.byteLength);
  readFully(fd, raw, at.offset, what);
  return at.dtype === 'F16' ? f16BytesToF32(raw, at.count) : bf16BytesToF32(raw, at.count);
}
