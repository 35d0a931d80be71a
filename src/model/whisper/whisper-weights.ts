// The weights of WhisperForConditionalGeneration in Hugging Face's names and shapes (linear
// weights [out, in], conv1d weights [out, in, kernel]). k_proj has no bias in Whisper; proj_out
// is the token embedding (a checkpoint may store it, tied, or not).

import type { WeightSpec } from '../architectures/architecture';
import type { WhisperArchConfig } from '../types';
import { encoderOf } from './whisper-config';

/** The attention block's tensors under `prefix` (…self_attn or …encoder_attn). */
function attention(prefix: string, d: number): WeightSpec[] {
  return [
    { name: `${prefix}.q_proj.weight`, shape: [d, d], isNorm: false },
    { name: `${prefix}.q_proj.bias`, shape: [d], isNorm: false },
    { name: `${prefix}.k_proj.weight`, shape: [d, d], isNorm: false },
    { name: `${prefix}.v_proj.weight`, shape: [d, d], isNorm: false },
    { name: `${prefix}.v_proj.bias`, shape: [d], isNorm: false },
    { name: `${prefix}.out_proj.weight`, shape: [d, d], isNorm: false },
    { name: `${prefix}.out_proj.bias`, shape: [d], isNorm: false },
  ];
}

function layerNorm(prefix: string, d: number): WeightSpec[] {
  return [
    { name: `${prefix}.weight`, shape: [d], isNorm: true },
    { name: `${prefix}.bias`, shape: [d], isNorm: false, isNormBias: true },
  ];
}

function feedForward(prefix: string, d: number, ffn: number): WeightSpec[] {
  return [
    { name: `${prefix}.fc1.weight`, shape: [ffn, d], isNorm: false },
    { name: `${prefix}.fc1.bias`, shape: [ffn], isNorm: false },
    { name: `${prefix}.fc2.weight`, shape: [d, ffn], isNorm: false },
    { name: `${prefix}.fc2.bias`, shape: [d], isNorm: false },
  ];
}

export function whisperWeightSpecs(config: WhisperArchConfig): WeightSpec[] {
  const enc = encoderOf(config);
  const d = config.hiddenSize;
  const specs: WeightSpec[] = [
    { name: 'model.encoder.conv1.weight', shape: [d, enc.numMelBins, 3], isNorm: false },
    { name: 'model.encoder.conv1.bias', shape: [d], isNorm: false },
    { name: 'model.encoder.conv2.weight', shape: [d, d, 3], isNorm: false },
    { name: 'model.encoder.conv2.bias', shape: [d], isNorm: false },
    { name: 'model.encoder.embed_positions.weight', shape: [enc.numPositions, d], isNorm: false },
  ];
  for (let i = 0; i < enc.numLayers; i++) {
    const p = `model.encoder.layers.${i}`;
    specs.push(...attention(`${p}.self_attn`, d), ...layerNorm(`${p}.self_attn_layer_norm`, d));
    specs.push(...feedForward(p, d, enc.ffnDim), ...layerNorm(`${p}.final_layer_norm`, d));
  }
  specs.push(...layerNorm('model.encoder.layer_norm', d));
  specs.push(
    { name: 'model.decoder.embed_tokens.weight', shape: [config.vocabSize, d], isNorm: false },
    { name: 'model.decoder.embed_positions.weight', shape: [config.maxPositionEmbeddings, d], isNorm: false },
  );
  for (let i = 0; i < config.numLayers; i++) {
    const p = `model.decoder.layers.${i}`;
    specs.push(...attention(`${p}.self_attn`, d), ...layerNorm(`${p}.self_attn_layer_norm`, d));
    specs.push(...attention(`${p}.encoder_attn`, d), ...layerNorm(`${p}.encoder_attn_layer_norm`, d));
    specs.push(...feedForward(p, d, enc.decoderFfnDim), ...layerNorm(`${p}.final_layer_norm`, d));
  }
  specs.push(...layerNorm('model.decoder.layer_norm', d));
  if (!config.tieWordEmbeddings) specs.push({ name: 'proj_out.weight', shape: [config.vocabSize, d], isNorm: false });
  return specs;
}
