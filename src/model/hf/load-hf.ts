// A Hugging Face model directory -> config, weights (safetensors) or an ONNX export path.
// Which tensors are weights, and under which names, is the architecture descriptor's business.
import { join } from 'node:path';
import type { ArchitectureDescriptor } from '../architectures/architecture';
import { checkWeightShapes } from '../architectures/registry';
import { ExpertStacks } from './expert-stacks';
import type { ModelArchConfig, ModelOutput, ModelWeights, TensorFileSpan } from '../types';
import { WeightMap } from '../weight-map';
import { hfArchitecture } from './hf-config';
import { readJsonFile } from './hf-tokenizer-files';
import { findOnnxExport } from './onnx-export';
import { checkSafetensorsDtype, listSafetensors, readSafetensorsAsF32, type SafetensorsTensor } from './safetensors';

/** What a directory holds before any weight is read. */
export interface HfModelInfo {
  dir: string;
  configJson: Record<string, unknown>;
  descriptor: ArchitectureDescriptor;
  config: ModelArchConfig;
  /** Stored tensors by stored name; null for an ONNX export. */
  tensors: Map<string, SafetensorsTensor> | null;
  onnxPath: string | null;
}

export interface HfModel extends HfModelInfo {
  weights: ModelWeights | null;
}

export function readHfModel(dir: string): HfModelInfo {
  const configJson = readJsonFile(join(dir, 'config.json'));
  if (!configJson) throw new Error(`${dir}: no config.json; not a Hugging Face model directory`);
  const tensors = listSafetensors(dir);
  if (!tensors) {
    const onnxPath = findOnnxExport(dir);
    if (!onnxPath) throw new Error(`${dir}: no model.safetensors, model.safetensors.index.json or ONNX export (onnx/model.onnx)`);
    const { descriptor, config } = hfArchitecture(configJson, { source: dir, hasTensor: () => null });
    return { dir, configJson, descriptor, config, tensors: null, onnxPath };
  }
  const { descriptor, config } = hfArchitecture(configJson, { source: dir, hasTensor: (name) => tensors.has(name) });
  return { dir, configJson, descriptor, config, tensors, onnxPath: null };
}

/** Checks names, shapes and dtypes of the tensors `output` needs before anything is read; reads them when asked. */
export function loadHfModelWeights(info: HfModelInfo, output: ModelOutput, loadWeights: boolean): ModelWeights | null {
  if (!info.tensors) return null;
  const wanted = selectWeights(info, output);
  if (!loadWeights) return null;
  const weights = readWeights(wanted);
  info.descriptor.unfuseWeights?.(info.config, weights);
  return weights;
}

export function loadHfModel(dir: string, opts: { loadWeights: boolean; output?: ModelOutput }): HfModel {
  const info = readHfModel(dir);
  return { ...info, weights: loadHfModelWeights(info, opts.output ?? { kind: 'logits' }, opts.loadWeights) };
}

/** The stored tensors the graph reads, under their canonical names. */
function selectWeights(info: HfModelInfo, output: ModelOutput): Array<{ name: string; tensor: SafetensorsTensor }> {
  const { descriptor, config, dir } = info;
  const stored = new Map<string, SafetensorsTensor>();
  const stacks = new ExpertStacks<SafetensorsTensor>();
  for (const tensor of info.tensors!.values()) {
    const name = descriptor.hf.tensorName(tensor.name, config, output);
    if (name !== null && !stacks.add(name, tensor)) stored.set(name, tensor);
  }
  const specs = descriptor.weightSpecs(config, output);
  checkWeightShapes(specs, (name) => stacks.shape(name) ?? stored.get(name)?.shape, dir);
  for (const [name, parts] of stacks.entries()) {
    if (!specs.some((spec) => spec.name === name)) throw new Error(`${parts[0].file}: tensor ${parts[0].name} is not part of a ${config.architecture} ${describeOutput(output)} this server can run`);
    for (const [index, tensor] of parts.entries()) stored.set(stacks.partName(name, index), tensor);
  }
  const used = new Set([...specs.map((s) => s.name), ...stacks.partNames()]);
  const wanted: Array<{ name: string; tensor: SafetensorsTensor }> = [];
  for (const [name, tensor] of stored) {
    if (!used.has(name)) {
      throw new Error(`${tensor.file}: tensor ${tensor.name} is not part of a ${config.architecture} ${describeOutput(output)} this server can run`);
    }
    checkSafetensorsDtype(tensor);
    wanted.push({ name, tensor });
  }
  return wanted;
}

function describeOutput(output: ModelOutput): string {
  return { logits: 'decoder', pooled: 'embedding model', classifier: 'classifier', transcription: 'speech model' }[output.kind];
}

function readWeights(tensors: Array<{ name: string; tensor: SafetensorsTensor }>): WeightMap {
  const weights = new WeightMap();
  const names = new Map(tensors.map(({ name, tensor }) => [tensor, name]));
  const stacking = ExpertStacks.filling([...names.values()], (name, tensor) => weights.set(name, tensor));
  readSafetensorsAsF32(
    tensors.map((t) => t.tensor),
    (tensor, data) => {
      const name = names.get(tensor)!;
      if (!stacking.take(name, tensor.shape, data)) weights.set(name, { kind: 'f32', shape: tensor.shape, data, file: fileSpan(tensor) });
    },
  );
  return weights;
}

/** Float32 tensors are read as stored: readers may take their bytes from the file (WeightTensor.file). */
function fileSpan(tensor: SafetensorsTensor): TensorFileSpan | undefined {
  return tensor.dtype === 'F32' ? { path: tensor.file, offset: tensor.offset, byteLength: tensor.byteLength } : undefined;
}
