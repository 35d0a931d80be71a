// Reads a LoRA adapter from a PEFT directory or a llama.cpp GGUF adapter file into LoraWeights,
// checked against the base model.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import type { DecoderArchConfig } from '../types';
import { loadGgufAdapter } from './gguf-adapter';
import { LoraLoadError, type LoraLimits, type LoraWeights } from './lora-weights';
import { loadPeftAdapter } from './peft-adapter';

/** The adapter at `path` (a PEFT directory, or a GGUF file with general.type = adapter), checked against `base`; throws LoraLoadError. */
export async function loadLoraAdapter(path: string, base: DecoderArchConfig, limits: LoraLimits): Promise<LoraWeights> {
  if (!existsSync(path)) throw new LoraLoadError(`No adapter found for ${path}`);
  try {
    if (statSync(path).isDirectory()) return loadPeftAdapter(path, base, limits);
    if (startsWithGgufMagic(path)) return await loadGgufAdapter(path, base, limits);
  } catch (err) {
    // A file system or format error below (unreadable, truncated) still reaches the caller as a LoraLoadError.
    if (err instanceof LoraLoadError) throw err;
    throw new LoraLoadError(`${path}: ${(err as Error).message}`);
  }
  throw new LoraLoadError(`${path}: not a LoRA adapter (expected a PEFT directory with adapter_config.json, or a llama.cpp GGUF adapter file)`);
}

function startsWithGgufMagic(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const magic = Buffer.alloc(4);
    return readSync(fd, magic, 0, 4, 0) === 4 && magic.toString('latin1') === 'GGUF';
  } finally {
    closeSync(fd);
  }
}
