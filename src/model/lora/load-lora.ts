// Reads a LoRA adapter from a PEFT directory or a llama.cpp GGUF adapter file into LoraWeights,
// checked against the base model.
import type { DecoderArchConfig } from '../types';
import { LoraLoadError, type LoraLimits, type LoraWeights } from './lora-weights';

/** The adapter at `path` (a PEFT directory, or a GGUF file with general.type = adapter), checked against `base`; throws LoraLoadError. */
export function loadLoraAdapter(path: string, base: DecoderArchConfig, limits: LoraLimits): Promise<LoraWeights> {
  void base;
  void limits;
  return Promise.reject(new LoraLoadError(`cannot load ${path}: LoRA loading is not built yet`));
}
