// A Hugging Face model directory -> config, weights (safetensors) or an ONNX export path.
import { join } from 'node:path';
import { audioFeatureConfigFromJson } from '../audio/feature-config';
import type { ModelArchConfig, ModelWeights } from '../types';
import { checkModelWeights, modelWeightSpecs } from '../weight-specs';
import { WeightMap } from '../weight-map';
import { whisperArchConfig } from '../whisper/whisper-config';
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
  if (configJson.model_type === 'whisper') {
    if (!tensors) throw new Error(`${dir}: Whisper needs model.safetensors (or model.safetensors.index.json); ONNX exports of Whisper are not supported`);
    const features = audioFeatureConfigFromJson(readJsonFile(join(dir, 'preprocessor_config.json')), Number(configJson.num_mel_bins ?? 80), dir);
    const config = whisperArchConfig(configJson, features, dir);
    const wanted = selectWeights(tensors, config, dir);
    return { config, weights: opts.loadWeights ? readWeights(wanted) : null, onnxPath: null };
  }
  if (!tensors) {
    const onnxPath = findOnnxExport(dir);
    if (!onnxPath) throw new Error(`${dir}: no model.safetensors, model.safetensors.index.json or ONNX export (onnx/model.onnx)`);
    return { config: hfArchConfig(configJson, dir, true), weights: null, onnxPath };
  }
  const config = hfArchConfig(configJson, dir, tensors.has('lm_head.weight'));
  const wanted = selectWeights(tensors, config, dir);
  return { config, weights: opts.loadWeights ? readWeights(wanted) : null, onnxPath: null };
}

/** Output heads a tied checkpoint may still store (the graph uses the embedding). */
const TIED_HEADS = new Set(['lm_head.weight', 'proj_out.weight']);

/** The tensors the model uses, checked for names, shapes and dtypes before anything is read. */
function selectWeights(tensors: Map<string, SafetensorsTensor>, config: ModelArchConfig, dir: string): SafetensorsTensor[] {
  checkModelWeights(config, (name) => tensors.get(name)?.shape, dir);
  const modelNames = new Set(modelWeightSpecs(config).map((s) => s.name));
  const wanted: SafetensorsTensor[] = [];
  for (const tensor of tensors.values()) {
    if (NOT_WEIGHTS.test(tensor.name)) continue;
    if (TIED_HEADS.has(tensor.name) && config.tieWordEmbeddings) continue;
    if (!modelNames.has(tensor.name)) {
      throw new Error(`${tensor.file}: tensor ${tensor.name} is not part of a ${config.architecture} model this server can run`);
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
