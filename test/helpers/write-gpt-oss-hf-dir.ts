// Writes canonical gpt-oss weights as a Hugging Face directory laid out as openai/gpt-oss-* ship
// it: config.json with GptOssConfig's fields, the router as mlp.router, the experts fused with
// gate and up outputs interleaved, either as MXFP4 (gate_up_proj_blocks [experts, 2 * ffn,
// hidden / 32, 16] with _scales [experts, 2 * ffn, hidden / 32], down_proj_* [experts, hidden, …],
// as released) or as floats transposed (gate_up_proj [experts, hidden, 2 * ffn], down_proj
// [experts, ffn, hidden], as transformers dequantizes them), with *_bias, and a tokenizer.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { quantizeMxfp4 } from '../../src/model/gguf/quantize';
import type { GptOssArchConfig } from '../../src/model/gpt-oss/gpt-oss-config';
import { encode, type SafetensorsDtype } from '../../src/model/hf/safetensors-writer';
import { ggufVocabToTokenizerJson } from '../../src/model/tokenizer';
import type { ModelWeights } from '../../src/model/types';

export interface GptOssHfDirOptions {
  /** Float tensors' dtype (F32 default). */
  dtype?: SafetensorsDtype;
  /** GGUF metadata whose tokenizer.* keys become tokenizer.json (stories260K's in the tests). */
  tokenizerMetadata: Record<string, unknown>;
  /** rope_scaling.truncate as shipped (false); undefined leaves it out (transformers' default: true). */
  truncate?: boolean;
  /** The experts as MXFP4 blocks/scales (as released) instead of transposed floats. */
  mxfp4?: boolean;
}

interface Stored {
  name: string;
  dtype: SafetensorsDtype | 'U8';
  shape: number[];
  bytes: Uint8Array;
}

export function writeGptOssHfDir(dir: string, config: GptOssArchConfig, weights: ModelWeights, opts: GptOssHfDirOptions): void {
  mkdirSync(dir, { recursive: true });
  writeJson(join(dir, 'config.json'), gptOssConfigJson(config, opts));
  writeStored(join(dir, 'model.safetensors'), hfTensors(config, weights, opts));
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
    ...(opts.mxfp4 ? { quantization_config: { quant_method: 'mxfp4', modules_to_not_convert: ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head'] } } : {}),
  };
}

function hfTensors(c: GptOssArchConfig, weights: ModelWeights, opts: GptOssHfDirOptions): Stored[] {
  const dtype = opts.dtype ?? 'F32';
  const floats = (name: string, shape: number[], data: Float32Array): Stored => ({ name, dtype, shape, bytes: encode(data, dtype) });
  const f32 = (name: string) => {
    const t = weights.get(name);
    if (t.kind !== 'f32') throw new Error(`${name} is quantized`);
    return t.data;
  };
  const { numExperts: e, expertIntermediateSize: f, hiddenSize: h } = c;
  const out: Stored[] = [];
  for (const name of weights.names()) {
    const m = /^(model\.layers\.\d+\.mlp\.)(.+)$/.exec(name);
    if (!m) {
      out.push(floats(name, weights.get(name).shape, f32(name)));
      continue;
    }
    const [, p, rest] = m;
    if (rest === 'gate.weight' || rest === 'gate.bias') out.push(floats(`${p}router.${rest.slice('gate.'.length)}`, weights.get(name).shape, f32(name)));
    if (rest !== 'experts.gate_proj.weight') continue;
    // gate_up rows [e, 2f, h]: gate row i at 2i, up row i at 2i + 1.
    const gate = f32(`${p}experts.gate_proj.weight`);
    const up = f32(`${p}experts.up_proj.weight`);
    const gateUp = new Float32Array(e * 2 * f * h);
    for (let r = 0; r < e * f; r++) {
      gateUp.set(gate.subarray(r * h, (r + 1) * h), 2 * r * h);
      gateUp.set(up.subarray(r * h, (r + 1) * h), (2 * r + 1) * h);
    }
    const down = f32(`${p}experts.down_proj.weight`);
    if (opts.mxfp4) {
      out.push(...mxfp4Pair(`${p}experts.gate_up_proj`, [e, 2 * f, h], gateUp), ...mxfp4Pair(`${p}experts.down_proj`, [e, h, f], down));
    } else {
      out.push(floats(`${p}experts.gate_up_proj`, [e, h, 2 * f], transposeLast(gateUp, e, 2 * f, h)), floats(`${p}experts.down_proj`, [e, f, h], transposeLast(down, e, h, f)));
    }
    const gateBias = f32(`${p}experts.gate_proj.bias`);
    const upBias = f32(`${p}experts.up_proj.bias`);
    const gateUpBias = new Float32Array(e * 2 * f);
    for (let j = 0; j < e * f; j++) {
      gateUpBias[2 * j] = gateBias[j];
      gateUpBias[2 * j + 1] = upBias[j];
    }
    out.push(floats(`${p}experts.gate_up_proj_bias`, [e, 2 * f], gateUpBias), floats(`${p}experts.down_proj_bias`, [e, h], f32(`${p}experts.down_proj.bias`)));
  }
  return out;
}

/** [n, rows, cols] -> [n, cols, rows]. */
function transposeLast(x: Float32Array, n: number, rows: number, cols: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let b = 0; b < n; b++) for (let r = 0; r < rows; r++) for (let col = 0; col < cols; col++) out[(b * cols + col) * rows + r] = x[(b * rows + r) * cols + col];
  return out;
}

/**
 * HF's MXFP4 pair of a [.., out, in] tensor, from ggml's quantizer (same E2M1 codes and E8M0
 * exponent; ggml packs element j with j + 16 in a byte, HF element 2i with 2i + 1).
 */
function mxfp4Pair(name: string, shape: number[], values: Float32Array): Stored[] {
  const ggml = quantizeMxfp4(values);
  const groups = values.length / 32;
  const blocks = new Uint8Array(groups * 16);
  const scales = new Uint8Array(groups);
  for (let g = 0; g < groups; g++) {
    scales[g] = ggml[g * 17];
    const code = (j: number) => (j < 16 ? ggml[g * 17 + 1 + j] & 0x0f : ggml[g * 17 + 1 + j - 16] >> 4);
    for (let i = 0; i < 16; i++) blocks[g * 16 + i] = code(2 * i) | (code(2 * i + 1) << 4);
  }
  const lead = shape.slice(0, -1);
  const perRow = shape[shape.length - 1] / 32;
  return [
    { name: `${name}_blocks`, dtype: 'U8', shape: [...lead, perRow, 16], bytes: blocks },
    { name: `${name}_scales`, dtype: 'U8', shape: [...lead, perRow], bytes: scales },
  ];
}

/** A safetensors file of tensors already encoded (floats and U8 side by side, as gpt-oss ships them). */
function writeStored(path: string, tensors: Stored[]): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes.byteLength] };
    offset += t.bytes.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  writeFileSync(path, Buffer.concat([length, Buffer.from(json), ...tensors.map((t) => t.bytes)]));
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 2));
}
