// Detects an ONNX decoder export (optimum / onnx-community layout) whose graph takes a KV cache.
import { existsSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { withFile } from '../read-fully';

const CANDIDATES = ['onnx/model.onnx', 'model.onnx'];
const KV_INPUT = Buffer.from('past_key_values.0.key');

/** Path of the export, or null. Throws when an export exists but takes no past_key_values. */
export function findOnnxExport(dir: string): string | null {
  const path = CANDIDATES.map((c) => join(dir, c)).find((p) => existsSync(p));
  if (!path) return null;
  if (!fileContains(path, KV_INPUT)) {
    throw new Error(`${path}: the ONNX export has no past_key_values.N.key/value inputs; export it with a KV cache (optimum "text-generation-with-past")`);
  }
  return path;
}

/**
 * Input names are plain UTF-8 strings in the protobuf, so a byte scan finds them without parsing
 * a possibly multi-GB model. Chunks overlap by the needle length so a match across a boundary counts.
 */
function fileContains(path: string, needle: Buffer): boolean {
  return withFile(path, (fd) => {
    const chunk = Buffer.alloc(8 << 20);
    let position = 0;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, position);
      if (n === 0) return false;
      if (chunk.subarray(0, n).includes(needle)) return true;
      if (n < chunk.length) return false;
      position += n - needle.length;
    }
  });
}
