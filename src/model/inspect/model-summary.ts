// What `ortllm models` shows for a model: architecture, parameter count, weight types, context
// length and size on disk — read from the GGUF header or config.json + safetensors headers,
// after the same checks `serve` makes (a model that fails them is reported as not servable).

import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ggmlTypeName } from '../gguf/ggml-types';
import { loadGgufModel } from '../gguf/load-gguf';
import { loadHfModel } from '../hf/load-hf';
import { listSafetensors } from '../hf/safetensors';
import { architectureOf } from '../architectures/registry';
import { isGgufFile } from '../load-model';

export interface ModelSummary {
  path: string;
  name: string;
  format: 'gguf' | 'hf-safetensors' | 'hf-onnx';
  architecture: string;
  /** null when the format does not say (ONNX exports). */
  parameters: number | null;
  /** e.g. "Q8_0", "F16", "Q4_K + Q6_K". */
  quantization: string;
  contextLength: number;
  sizeBytes: number;
}

/** llama.cpp's general.file_type (LLAMA_FTYPE_*) names of the types this server loads. */
const GGUF_FILE_TYPES: Record<number, string> = { 0: 'F32', 1: 'F16', 2: 'Q4_0', 7: 'Q8_0', 14: 'Q4_K_S', 15: 'Q4_K_M', 18: 'Q6_K', 32: 'BF16' };

const product = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Types by share of parameters, most first ("Q4_K + Q6_K"). */
function dominantTypes(entries: Array<{ type: string; elements: number }>): string {
  const byType = new Map<string, number>();
  for (const e of entries) byType.set(e.type, (byType.get(e.type) ?? 0) + e.elements);
  return [...byType.entries()]
    .sort((a, b) => b[1] - a[1])
    .filter(([, n], i, all) => i === 0 || n > 0.05 * all[0][1])
    .map(([t]) => t)
    .join(' + ');
}

function sizeOnDisk(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((sum, entry) => sum + sizeOnDisk(join(path, entry)), 0);
}

export async function summarizeModel(path: string): Promise<ModelSummary> {
  if (statSync(path).isDirectory()) {
    const hf = loadHfModel(path, { loadWeights: false });
    const tensors = listSafetensors(path);
    const entries = tensors ? [...tensors.values()].map((t) => ({ type: t.dtype, elements: product(t.shape) })) : [];
    return {
      path,
      name: basename(path),
      format: hf.onnxPath ? 'hf-onnx' : 'hf-safetensors',
      architecture: hf.config.architecture,
      parameters: tensors ? entries.reduce((n, e) => n + e.elements, 0) : null,
      quantization: tensors ? dominantTypes(entries) : 'ONNX export',
      contextLength: architectureOf(hf.config).contextLength(hf.config),
      sizeBytes: sizeOnDisk(path),
    };
  }
  if (!isGgufFile(path)) throw new Error(`${path} is neither a GGUF file nor a Hugging Face model directory`);
  const gguf = await loadGgufModel(path, { loadWeights: false });
  const entries = gguf.file.tensors.map((t) => ({ type: ggmlTypeName(t.type), elements: product(t.ggmlShape) }));
  const fileType = gguf.file.metadata['general.file_type'];
  return {
    path,
    name: basename(path).replace(/\.gguf$/i, ''),
    format: 'gguf',
    architecture: gguf.config.architecture,
    parameters: entries.reduce((n, e) => n + e.elements, 0),
    quantization: (typeof fileType === 'number' ? GGUF_FILE_TYPES[fileType] : undefined) ?? dominantTypes(entries.filter((_, i) => gguf.file.tensors[i].ggmlShape.length > 1)),
    contextLength: architectureOf(gguf.config).contextLength(gguf.config),
    sizeBytes: statSync(path).size,
  };
}

/** The entries of `dir` that look like models: *.gguf files and directories with a config.json. */
export function modelCandidates(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => (e.isFile() && e.name.toLowerCase().endsWith('.gguf')) || (e.isDirectory() && statSync(join(dir, e.name, 'config.json'), { throwIfNoEntry: false })?.isFile()))
    .map((e) => join(dir, e.name))
    .sort();
}
