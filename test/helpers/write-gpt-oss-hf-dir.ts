// Writes canonical gpt-oss weights as a Hugging Face directory laid out as openai/gpt-oss-* ship
// it (without MXFP4): config.json with GptOssConfig's fields, the router as mlp.router, the experts
// fused and transposed (gate_up_proj [experts, hidden, 2 * ffn] with gate and up interleaved
// column by column, down_proj [experts, ffn, hidden], *_bias), and a tokenizer.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GptOssArchConfig } from '../../src/model/gpt-oss/gpt-oss-config';
import { writeSafetensors, type SafetensorsDtype } from '../../src/model/hf/safetensors-writer';
import { ggufVocabToTokenizerJson } from '../../src/model/tokenizer';
import type { ModelWeights, WeightTensor } from '../../src/model/types';

export interface GptOssHfDirOptions {
  dtype?: SafetensorsDtype;
  /** GGUF metadata whose tokenizer.* keys become tokenizer.json (stories260K's in the tests). */
  tokenizerMetadata: Record<string, unknown>;
  /** rope_scaling.truncate as shipped (false); undefined leaves it out (transformers' default: true). */
  truncate?: boolean;
}

export function writeGptOssHfDir(dir: string, config: GptOssArchConfig, weights: ModelWeights, opts: GptOssHfDirOptions): void {
  mkdirSync(dir, { recursive: true });
  writeJson(join(dir, 'config.json'), gptOssConfigJson(config, opts));
  writeSafetensors(join(dir, 'model.safetensors'), hfTensors(config, weights), opts.dtype ?? 'F32');
  const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(opts.tokenizerMetadata);
  writeJson(join(dir, 'tokenizer.json'), tokenizerJson);
  writeJson(join(dir, 'tokenizer_config.json'), tokenizerConfig);
}

function gptOssConfigJson(c: GptOssArchConfig, opts: GptOssHfDirOptions): object {
  const scaling = c.ropeScaling ?? {};
  return {
    architectures: ['GptOssForCausalLM'],
    model_type: 'gpt_oss',
    attention_bias: true,
    attention_dropout: 0.0,
    eos_token_id: opts.tokenizerMetadata['tokenizer.ggml.eos_token_id'],
    experts_per_token: c.numExpertsPerToken,
    head_dim: c.headDim,
    hidden_act: 'silu',
    hidden_size: c.hiddenSize,
    initial_context_length: scaling.original_max_position_embeddings,
    initializer_range: 0.02,
    intermediate_size: c.expertIntermediateSize,
    layer_types: c.layerTypes,
    max_position_embeddings: c.maxPositionEmbeddings,
    num_attention_heads: c.numHeads,
    num_experts_per_tok: c.numExpertsPerToken,
    num_hidden_layers: c.numLayers,
    num_key_value_heads: c.numKvHeads,
    num_local_experts: c.numExperts,
    output_router_logits: false,
    rms_norm_eps: c.rmsNormEps,
    rope_scaling: { ...scaling, ...(opts.truncate === undefined ? {} : { truncate: opts.truncate }) },
    rope_theta: c.ropeTheta,
    router_aux_loss_coef: 0.9,
    sliding_window: c.slidingWindow,
    swiglu_limit: c.swigluLimit,
    tie_word_embeddings: false,
    torch_dtype: 'float32',
    use_cache: true,
    vocab_size: c.vocabSize,
  };
}

function hfTensors(c: GptOssArchConfig, weights: ModelWeights): Array<{ name: string; tensor: WeightTensor }> {
  const out: Array<{ name: string; tensor: WeightTensor }> = [];
  const f32 = (name: string) => {
    const t = weights.get(name);
    if (t.kind !== 'f32') throw new Error(`${name} is quantized`);
    return t.data;
  };
  const { numExperts: e, expertIntermediateSize: f, hiddenSize: h } = c;
  for (const name of weights.names()) {
    const m = /^(model\.layers\.\d+\.mlp\.)(.+)$/.exec(name);
    if (!m) {
      out.push({ name, tensor: weights.get(name) });
      continue;
    }
    const [, p, rest] = m;
    if (rest === 'gate.weight' || rest === 'gate.bias') out.push({ name: `${p}router.${rest.slice('gate.'.length)}`, tensor: weights.get(name) });
    if (rest !== 'experts.gate_proj.weight') continue;
    const gate = f32(`${p}experts.gate_proj.weight`);
    const up = f32(`${p}experts.up_proj.weight`);
    const gateUp = new Float32Array(e * h * 2 * f);
    for (let x = 0; x < e; x++) {
      for (let i = 0; i < f; i++) {
        for (let col = 0; col < h; col++) {
          gateUp[(x * h + col) * 2 * f + 2 * i] = gate[(x * f + i) * h + col];
          gateUp[(x * h + col) * 2 * f + 2 * i + 1] = up[(x * f + i) * h + col];
        }
      }
    }
    const gateBias = f32(`${p}experts.gate_proj.bias`);
    const upBias = f32(`${p}experts.up_proj.bias`);
    const gateUpBias = new Float32Array(e * 2 * f);
    for (let j = 0; j < e * f; j++) {
      gateUpBias[2 * j] = gateBias[j];
      gateUpBias[2 * j + 1] = upBias[j];
    }
    const down = f32(`${p}experts.down_proj.weight`);
    const downT = new Float32Array(e * f * h);
    for (let x = 0; x < e; x++) for (let col = 0; col < h; col++) for (let i = 0; i < f; i++) downT[(x * f + i) * h + col] = down[(x * h + col) * f + i];
    out.push(
      { name: `${p}experts.gate_up_proj`, tensor: { kind: 'f32', shape: [e, h, 2 * f], data: gateUp } },
      { name: `${p}experts.gate_up_proj_bias`, tensor: { kind: 'f32', shape: [e, 2 * f], data: gateUpBias } },
      { name: `${p}experts.down_proj`, tensor: { kind: 'f32', shape: [e, f, h], data: downT } },
      { name: `${p}experts.down_proj_bias`, tensor: { kind: 'f32', shape: [e, h], data: f32(`${p}experts.down_proj.bias`) } },
    );
  }
  return out;
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 2));
}
