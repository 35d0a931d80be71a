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
import { dequantizeMxfp4Blocks } from './mxfp4';
import { hfMxfp4ToQ8_0, mxfp4AsWeight } from '../gguf/mxfp4-to-q8';
import { checkSafetensorsDtype, listSafetensors, readSafetensorsAsF32, readSafetensorsBytes, type SafetensorsTensor } from './safetensors';

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
  const weights = readWeights(wanted, (name) => info.descriptor.hf.adjustValues?.(name, info.config) ?? null);
  info.descriptor.unfuseWeights?.(info.config, weights);
  return weights;
}

export function loadHfModel(dir: string, opts: { loadWeights: boolean; output?: ModelOutput }): HfModel {
  const info = readHfModel(dir);
  return { ...info, weights: loadHfModelWeights(info, opts.output ?? { kind: 'logits' }, opts.loadWeights) };
}

/** An MXFP4 weight as HF stores it: `X_blocks` (U8 [..., G, 16]) and `X_scales` (U8 [..., G]). */
interface Mxfp4Pair {
  blocks: SafetensorsTensor;
  scales: SafetensorsTensor;
}

/**
 * The stored tensors with each MXFP4 pair (gpt-oss's experts) as one tensor X of its values' shape
 * [..., G * 32], read by dequantizing both (hf/mxfp4.ts); `pairs` maps those tensors to their parts.
 */
function withMxfp4Pairs(tensors: Map<string, SafetensorsTensor>): { tensors: SafetensorsTensor[]; pairs: Map<SafetensorsTensor, Mxfp4Pair> } {
  const pairs = new Map<SafetensorsTensor, Mxfp4Pair>();
  const parts = new Set<SafetensorsTensor>();
  for (const blocks of tensors.values()) {
    const base = /^(.+)_blocks$/.exec(blocks.name)?.[1];
    const scales = base === undefined ? undefined : tensors.get(`${base}_scales`);
    if (!base || !scales || blocks.dtype !== 'U8' || scales.dtype !== 'U8' || blocks.shape.length < 2) continue;
    const groups = blocks.shape.slice(0, -1);
    pairs.set({ ...blocks, name: base, shape: [...groups.slice(0, -1), groups[groups.length - 1] * 32] }, { blocks, scales });
    parts.add(blocks).add(scales);
  }
  return { tensors: [...[...tensors.values()].filter((t) => !parts.has(t)), ...pairs.keys()], pairs };
}

/** The stored tensors the graph reads, under their canonical names. */
function selectWeights(info: HfModelInfo, output: ModelOutput): Array<{ name: string; tensor: SafetensorsTensor; mxfp4?: Mxfp4Pair }> {
  const { descriptor, config, dir } = info;
  const stored = new Map<string, SafetensorsTensor>();
  const stacks = new ExpertStacks<SafetensorsTensor>();
  const { tensors, pairs } = withMxfp4Pairs(info.tensors!);
  for (const tensor of tensors) {
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
  const wanted: Array<{ name: string; tensor: SafetensorsTensor; mxfp4?: Mxfp4Pair }> = [];
  for (const [name, tensor] of stored) {
    if (!used.has(name)) {
      throw new Error(`${tensor.file}: tensor ${tensor.name} is not part of a ${config.architecture} ${describeOutput(output)} this server can run`);
    }
    const mxfp4 = pairs.get(tensor);
    for (const part of mxfp4 ? [mxfp4.blocks, mxfp4.scales] : [tensor]) checkSafetensorsDtype(part);
    wanted.push({ name, tensor, mxfp4 });
  }
  return wanted;
}

function describeOutput(output: ModelOutput): string {
  return { logits: 'decoder', pooled: 'embedding model', classifier: 'classifier', transcription: 'speech model' }[output.kind];
}

/** `adjust`: the descriptor's conversion of a weight's stored values to the canonical form, by canonical name. */
function readWeights(all: Array<{ name: string; tensor: SafetensorsTensor; mxfp4?: Mxfp4Pair }>, adjust: (name: string) => ((values: Float32Array) => void) | null): WeightMap {
  const weights = new WeightMap();
  for (const { name, tensor, mxfp4 } of all) {
    if (!mxfp4) continue;
    const [blocks, scales] = [readSafetensorsBytes(mxfp4.blocks), readSafetensorsBytes(mxfp4.scales)];
    weights.set(name, mxfp4AsWeight(name, tensor.shape, hfMxfp4ToQ8_0(blocks, scales), () => dequantizeMxfp4Blocks(blocks, scales, mxfp4.blocks.shape)));
  }
  const tensors = all.filter((t) => !t.mxfp4);
  const names = new Map(tensors.map(({ name, tensor }) => [tensor, name]));
  const stacking = ExpertStacks.filling([...names.values()], (name, tensor) => weights.set(name, tensor));
  readSafetensorsAsF32(
    tensors.map((t) => t.tensor),
    (tensor, data) => {
      const name = names.get(tensor)!;
      const convert = adjust(name);
      convert?.(data);
      if (stacking.take(name, tensor.shape, data)) return;
      // Converted values are no longer the file's bytes.
      weights.set(name, { kind: 'f32', shape: tensor.shape, data, file: convert ? undefined : fileSpan(tensor) });
    },
  );
  return weights;
}

/** Float32 tensors are read as stored: readers may take their bytes from the file (WeightTensor.file). */
function fileSpan(tensor: SafetensorsTensor): TensorFileSpan | undefined {
  return tensor.dtype === 'F32' ? { path: tensor.file, offset: tensor.offset, byteLength: tensor.byteLength } : undefined;
}
