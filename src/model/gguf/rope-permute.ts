// llama.cpp's converter permutes the rows of a llama Q/K projection so that each head's RoPE pairs
// are adjacent (interleaved, Meta's original layout): GGUF row h*hd + 2i + j holds HF row
// h*hd + j*hd/2 + i (j ∈ {0,1}). HF (and our graph) use rotate-half order, so the loader moves
// whole rows back. Rows are opaque byte ranges, so this works on quantized blocks too.
import type { ModelArchConfig } from '../types';

/**
 * Head count of a Q/K tensor (weight or bias, HF name) of a family whose rows llama.cpp permutes
 * (the architecture descriptor decides which families do); null for other tensors.
 */
export function ropePermutedHeads(hfName: string, config: ModelArchConfig): number | null {
  if (/\.self_attn\.q_proj\.(weight|bias)$/.test(hfName)) return config.numHeads;
  if (/\.self_attn\.k_proj\.(weight|bias)$/.test(hfName)) return config.numKvHeads;
  return null;
}

/** Reorders Q/K rows in place: 'to-hf' un-permutes a GGUF tensor, 'to-gguf' permutes for writing one. */
export function reorderRopeRows(
  data: Uint8Array,
  numHeads: number,
  headDim: number,
  rowBytes: number,
  direction: 'to-hf' | 'to-gguf',
): void {
  if (headDim % 2 !== 0) throw new Error(`RoPE head dimension ${headDim} is odd`);
  const headBytes = headDim * rowBytes;
  if (data.byteLength !== numHeads * headBytes) {
    throw new Error(`RoPE row reorder: ${data.byteLength} bytes is not ${numHeads} heads × ${headDim} rows × ${rowBytes} bytes`);
  }
  const scratch = new Uint8Array(headBytes);
  const half = headDim / 2;
  for (let h = 0; h < numHeads; h++) {
    const head = data.subarray(h * headBytes, (h + 1) * headBytes);
    scratch.set(head);
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const interleaved = 2 * i + j;
        const rotateHalf = j * half + i;
        const [from, to] = direction === 'to-hf' ? [interleaved, rotateHalf] : [rotateHalf, interleaved];
        head.set(scratch.subarray(from * rowBytes, (from + 1) * rowBytes), to * rowBytes);
      }
    }
  }
}
