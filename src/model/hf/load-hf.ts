// A Hugging Face model directory -> config, weights (safetensors) or an ONNX export path.
import { join } from 'node:path';
import { checkDecoderWeights, decoderWeightSpecs } from '../decoder-weights';
import type { ModelArchConfig, ModelWeights } from '../types';
import { WeightMap } from '../weight-map';
import { hfArchConfig } from './hf-config';
import { readJsonFile } from './hf-tokenizer-files';
import { findOnnxExport } from './onnx-export';
import { checkSafetensorsDtype, listSafetensors, readSafetensorsAsF32, type SafetensorsTensor } from './safetensors';

export interface HfModel {
  config: ModelArchConfig;
  weights: ModelWeights | null;
  onnxPath: string | null;
}

/** Tensors some checkpoints carry that are not weights (old llama checkpoints saved RoPE tables). */
const NOT_WEIGHTS = /\.rotary_emb\.inv_freq$/;

export function loadHfModel(dir: string, opts: { loadWeights: boolean }): HfModel {
  const configJson = readJsonFile(join(dir, 'config.json'));
  if (!configJson) throw new Error(`${dir}: no config.json; not a Hugging Face model directory`);
  const tensors = listSafetensors(dir);
  if (!tensors) {
    const onnxPath = findOnnxExport(dir);
    if (!onnxPath) throw new Error(`${dir}: no model.safetensors, model.safetensors.index.json or ONNX export (onnx/model.onnx)`);
    return { config: hfArchConfig(configJson, dir, true), weights: null, onnxPath };
  }
  const config = hfArchConfig(configJson, dir, tensors.has('lm_head.weight'));
  const wanted = selectWeights(tensors, config, dir);
  return { config, weights: opts.loadWeights ? readWeights(wanted) : null, onnxPath: null };
}

/** The tensors the decoder uses, checked for names, shapes and dtypes before anything is read. */
function selectWeights(tensors: Map<string, SafetensorsTensor>, config: ModelArchConfig, dir: string): SafetensorsTensor[] {
  checkDecoderWeights(config, (name) => tensors.get(name)?.shape, dir);
  const decoderNames = new Set(decoderWeightSpecs(config).map((s) => s.name));
  const wanted: SafetensorsTensor[] = [];
  for (const tensor of tensors.values()) {
    if (NOT_WEIGHTS.test(tensor.name)) continue;
    // A tied checkpoint may still store lm_head; the graph uses the embedding.
    if (tensor.name === 'lm_head.weight' && config.tieWordEmbeddings) continue;
    if (!decoderNames.has(tensor.name)) {
      throw new Error(`${tensor.file}: tensor ${tensor.name} is not part of a ${config.architecture} decoder this server can run`);
    }
    checkSafetensorsDtype(tensor);
    wanted.push(tensor);
  }
  return wanted;
}

function readWeights(tensors: SafetensorsTensor[]): WeightMap {
  const weights = new WeightMap();
  readSafetensorsAsF32(tensors, (tensor, data) => weights.set(tensor.name, { kind: 'f32', shape: tensor.shape, data }));
  return weights;
}
