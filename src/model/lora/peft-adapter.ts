// Reads a PEFT LoRA directory (adapter_config.json + adapter_model.safetensors) into the stored
// A/B pairs. Tensor names look like base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight
// (A [r, in], B [out, r]); adapter_model.bin (a torch pickle) is refused, it cannot be read safely.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readSafetensorsAsF32, readSafetensorsHeader, type SafetensorsTensor } from '../hf/safetensors';
import type { DecoderArchConfig } from '../types';
import { assembleLoraWeights, checkLoraRank, type StoredLoraPair } from './assemble-lora';
import { LoraLoadError, type LoraLimits, type LoraWeights } from './lora-weights';
import { parsePeftConfig, type PeftLoraConfig } from './peft-config';

export const PEFT_CONFIG_FILE = 'adapter_config.json';
export const PEFT_WEIGHTS_FILE = 'adapter_model.safetensors';

const LORA_TENSOR = /^(.+)\.lora_([AB])\.weight$/;

export function loadPeftAdapter(dir: string, base: DecoderArchConfig, limits: LoraLimits): LoraWeights {
  const configPath = join(dir, PEFT_CONFIG_FILE);
  if (!existsSync(configPath)) throw new LoraLoadError(`No adapter found for ${dir} (no ${PEFT_CONFIG_FILE})`);
  const config = parsePeftConfig(readJson(configPath), configPath);
  checkLoraRank(config.rank, limits, dir);
  const weightsPath = join(dir, PEFT_WEIGHTS_FILE);
  if (!existsSync(weightsPath)) {
    if (existsSync(join(dir, 'adapter_model.bin'))) {
      throw new LoraLoadError(`${dir}: only adapter_model.bin (a torch pickle) is present; it cannot be read safely. Save the adapter as ${PEFT_WEIGHTS_FILE} (PEFT's save_pretrained(safe_serialization=True))`);
    }
    throw new LoraLoadError(`No adapter found for ${dir} (no ${PEFT_WEIGHTS_FILE})`);
  }
  let tensors: SafetensorsTensor[];
  try {
    tensors = readSafetensorsHeader(weightsPath);
  } catch (err) {
    throw new LoraLoadError((err as Error).message);
  }
  const stored = pairTensors(tensors, config, weightsPath);
  return assembleLoraWeights(stored, config, base, limits, dir);
}

function readJson(path: string): Record<string, unknown> {
  try {
    const json: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (json && typeof json === 'object' && !Array.isArray(json)) return json as Record<string, unknown>;
  } catch (err) {
    throw new LoraLoadError(`${path}: not valid JSON (${(err as Error).message})`);
  }
  throw new LoraLoadError(`${path}: not a JSON object`);
}

/** Groups the file's lora_A / lora_B tensors by module, checks them against the config, reads them. */
function pairTensors(tensors: readonly SafetensorsTensor[], config: PeftLoraConfig, file: string): StoredLoraPair[] {
  const modules = new Map<string, { a?: SafetensorsTensor; b?: SafetensorsTensor }>();
  for (const tensor of tensors) {
    const match = LORA_TENSOR.exec(tensor.name);
    if (!match) throw new LoraLoadError(unexpectedTensorMessage(tensor.name, file));
    const entry = modules.get(match[1]) ?? {};
    entry[match[2] === 'A' ? 'a' : 'b'] = tensor;
    modules.set(match[1], entry);
  }
  const pairs: StoredLoraPair[] = [];
  for (const [prefix, { a, b }] of modules) {
    if (!a || !b) throw new LoraLoadError(`${file}: ${prefix} has lora_${a ? 'A' : 'B'} but no lora_${a ? 'B' : 'A'}`);
    const { layer, module } = locate(prefix, config, file);
    pairs.push({ layer, module, a: new Float32Array(0), aShape: a.shape, b: new Float32Array(0), bShape: b.shape, name: prefix });
  }
  readPairData(pairs, modules, file);
  return pairs;
}

function readPairData(pairs: StoredLoraPair[], modules: ReadonlyMap<string, { a?: SafetensorsTensor; b?: SafetensorsTensor }>, file: string): void {
  const byTensor = new Map<string, { pair: StoredLoraPair; side: 'a' | 'b' }>();
  for (const pair of pairs) {
    const { a, b } = modules.get(pair.name)!;
    byTensor.set(a!.name, { pair, side: 'a' }).set(b!.name, { pair, side: 'b' });
  }
  try {
    readSafetensorsAsF32([...modules.values()].flatMap(({ a, b }) => [a!, b!]), (tensor, data) => {
      const { pair, side } = byTensor.get(tensor.name)!;
      pair[side] = data;
    });
  } catch (err) {
    throw new LoraLoadError(`${file}: ${(err as Error).message}`);
  }
}

/** Layer and module of a PEFT module path (base_model.model.model.layers.3.self_attn.q_proj), checked against the config. */
function locate(prefix: string, config: PeftLoraConfig, file: string): { layer: number; module: string } {
  const path = prefix.replace(/^base_model\.model\./, '');
  const module = path.slice(path.lastIndexOf('.') + 1);
  const layerMatch = /(?:^|\.)layers\.(\d+)\./.exec(path);
  if (!layerMatch) {
    const what = /embed_tokens|lm_head/.test(module) ? 'LoRA on the embeddings or the LM head (vLLM\'s extra vocabulary) is not supported' : 'it is not inside a decoder layer';
    throw new LoraLoadError(`${file}: ${prefix} adapts ${path}; ${what}`);
  }
  const layer = Number(layerMatch[1]);
  if (/\.experts\./.test(path)) {
    throw new LoraLoadError(`${file}: ${prefix} adapts a mixture-of-experts expert (${path}); LoRA on MoE experts is not supported`);
  }
  if (!config.targets(path)) throw new LoraLoadError(`${file}: ${prefix} adapts ${path}, which adapter_config.json's target_modules does not name`);
  if (config.layers && !config.layers.has(layer)) throw new LoraLoadError(`${file}: ${prefix} adapts layer ${layer}, which is not in layers_to_transform`);
  return { layer, module };
}

function unexpectedTensorMessage(name: string, file: string): string {
  if (name.includes('lora_magnitude_vector')) return `${file}: ${name}: vLLM does not yet support DoRA.`;
  if (name.includes('lora_embedding_')) return `${file}: ${name}: LoRA on the embeddings (vLLM's extra vocabulary) is not supported`;
  if (/\.bias$/.test(name)) return `${file}: ${name}: adapter biases are not supported`;
  return `${file}: tensor ${name} is not a LoRA A/B weight (expected names ending in .lora_A.weight / .lora_B.weight)`;
}

export function isPeftDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}
