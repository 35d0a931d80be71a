// gpt-oss weights: the canonical names and shapes the segments read, the GGUF names of
// llama.cpp's converter, and the HF checkpoint's own layout turned into the canonical one.
//
// Canonical per layer (prefix model.layers.{l}.): input_layernorm / post_attention_layernorm,
// self_attn.{q,k,v,o}_proj.{weight,bias}, self_attn.sinks [heads], the router mlp.gate.{weight,bias}
// and the experts stacked as mlp.experts.{gate,up,down}_proj.weight [experts, out, in] with
// .bias [experts, out] (the MoE decoders' names, llama.cpp's ffn_*_exps layout).
//
// HF stores the router as mlp.router and the experts fused: gate_up_proj whose outputs interleave
// gate (even) and up (odd), as floats [experts, hidden, 2 * ffn] (transposed) or as MXFP4
// gate_up_proj_blocks / _scales [experts, 2 * ffn, …] (not transposed), down_proj likewise, biases
// as gate_up_proj_bias / down_proj_bias (convert_hf_to_gguf's GptOssModel splits them the same way).
import type { WeightSpec } from '../architectures/architecture';
import { ggufNameMapping } from '../gguf/tensor-names';
import type { ModelOutput, WeightTensor } from '../types';
import type { WeightMap } from '../weight-map';
import type { GptOssArchConfig } from './gpt-oss-config';

const GLOBAL_NAMES: ReadonlyArray<readonly [gguf: string, canonical: string]> = [
  ['token_embd.weight', 'model.embed_tokens.weight'],
  ['output_norm.weight', 'model.norm.weight'],
  ['output.weight', 'lm_head.weight'],
];

const BLOCK_NAMES: ReadonlyArray<readonly [gguf: string, canonical: string]> = [
  ['attn_norm.weight', 'input_layernorm.weight'],
  ['post_attention_norm.weight', 'post_attention_layernorm.weight'],
  ...['q', 'k', 'v'].flatMap((p) => ['weight', 'bias'].map((s): [string, string] => [`attn_${p}.${s}`, `self_attn.${p}_proj.${s}`])),
  ['attn_output.weight', 'self_attn.o_proj.weight'],
  ['attn_output.bias', 'self_attn.o_proj.bias'],
  ['attn_sinks.weight', 'self_attn.sinks'],
  ['ffn_gate_inp.weight', 'mlp.gate.weight'],
  ['ffn_gate_inp.bias', 'mlp.gate.bias'],
  ...['gate', 'up', 'down'].flatMap((p) => ['weight', 'bias'].map((s): [string, string] => [`ffn_${p}_exps.${s}`, `mlp.experts.${p}_proj.${s}`])),
];

const NAMES = ggufNameMapping(GLOBAL_NAMES, BLOCK_NAMES, 'gpt-oss model');

/** The canonical name of a gpt-oss GGUF tensor; throws for tensors a gpt-oss file does not have. */
export const gptOssCanonicalName = (ggufName: string): string => NAMES.canonical(ggufName);

/** The GGUF name of a canonical gpt-oss weight. */
export const gptOssGgufName = (canonical: string): string => NAMES.gguf(canonical);

/** A stored HF tensor's name as weightSpecs lists it (the router renamed; fused experts as stored). */
export function gptOssHfName(stored: string): string {
  return stored.replace(/\.mlp\.router\.(weight|bias)$/, '.mlp.gate.$1');
}

/** The canonical weights, or for an HF checkpoint of fused experts, the stored expert tensors unfuseExperts turns into them. */
export function gptOssWeightSpecs(config: GptOssArchConfig, output: ModelOutput): WeightSpec[] {
  const { hiddenSize: h, numHeads, numKvHeads, headDim, vocabSize, numExperts: e, expertIntermediateSize: ffn } = config;
  const q = numHeads * headDim;
  const kv = numKvHeads * headDim;
  const matrix = (name: string, shape: number[]): WeightSpec => ({ name, shape, isNorm: false });
  const norm = (name: string): WeightSpec => ({ name, shape: [h], isNorm: true });
  const specs: WeightSpec[] = [matrix('model.embed_tokens.weight', [vocabSize, h])];
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}.`;
    specs.push(
      norm(`${p}input_layernorm.weight`),
      matrix(`${p}self_attn.q_proj.weight`, [q, h]),
      matrix(`${p}self_attn.q_proj.bias`, [q]),
      matrix(`${p}self_attn.k_proj.weight`, [kv, h]),
      matrix(`${p}self_attn.k_proj.bias`, [kv]),
      matrix(`${p}self_attn.v_proj.weight`, [kv, h]),
      matrix(`${p}self_attn.v_proj.bias`, [kv]),
      matrix(`${p}self_attn.o_proj.weight`, [h, q]),
      matrix(`${p}self_attn.o_proj.bias`, [h]),
      matrix(`${p}self_attn.sinks`, [numHeads]),
      norm(`${p}post_attention_layernorm.weight`),
      matrix(`${p}mlp.gate.weight`, [e, h]),
      matrix(`${p}mlp.gate.bias`, [e]),
    );
    if (config.expertStorage !== 'split') {
      // MXFP4 pairs reach here as one tensor of their values ([experts, out, in]: not transposed).
      const mxfp4 = config.expertStorage === 'mxfp4';
      specs.push(
        matrix(`${p}mlp.experts.gate_up_proj`, mxfp4 ? [e, 2 * ffn, h] : [e, h, 2 * ffn]),
        matrix(`${p}mlp.experts.gate_up_proj_bias`, [e, 2 * ffn]),
        matrix(`${p}mlp.experts.down_proj`, mxfp4 ? [e, h, ffn] : [e, ffn, h]),
        matrix(`${p}mlp.experts.down_proj_bias`, [e, h]),
      );
    } else {
      specs.push(
        matrix(`${p}mlp.experts.gate_proj.weight`, [e, ffn, h]),
        matrix(`${p}mlp.experts.gate_proj.bias`, [e, ffn]),
        matrix(`${p}mlp.experts.up_proj.weight`, [e, ffn, h]),
        matrix(`${p}mlp.experts.up_proj.bias`, [e, ffn]),
        matrix(`${p}mlp.experts.down_proj.weight`, [e, h, ffn]),
        matrix(`${p}mlp.experts.down_proj.bias`, [e, h]),
      );
    }
  }
  specs.push(norm('model.norm.weight'));
  if (output.kind === 'logits' && !config.tieWordEmbeddings) specs.push(matrix('lm_head.weight', [vocabSize, h]));
  return specs;
}

/**
 * Replaces an HF checkpoint's fused experts by the canonical split [experts, out, in] stacks:
 * gate and up are the even and odd outputs of gate_up_proj, stored [experts, in, out] as floats
 * and [experts, out, in] as MXFP4 (down_proj likewise). MXFP4 experts arrive as Q8_0 (rows of
 * blocks along in), so their rows move as bytes and stay quantized.
 */
export function unfuseGptOssExperts(config: GptOssArchConfig, weights: WeightMap): void {
  if (config.expertStorage === 'split') return;
  const { numExperts: e, expertIntermediateSize: ffn, hiddenSize: h } = config;
  const transposed = config.expertStorage === 'fused';
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}.mlp.experts.`;
    const [gate, up] = transposed ? splitTransposedGateUp(f32Of(weights, `${p}gate_up_proj`), e, ffn, h) : evenOddRows(weights.get(`${p}gate_up_proj`), [e, ffn, h]);
    const [gateBias, upBias] = evenOddRows(weights.get(`${p}gate_up_proj_bias`), [e, ffn]);
    let down = weights.get(`${p}down_proj`);
    if (transposed) {
      const stored = f32Of(weights, `${p}down_proj`);
      const data = new Float32Array(e * h * ffn);
      for (let x = 0; x < e; x++) for (let i = 0; i < ffn; i++) for (let c = 0; c < h; c++) data[(x * h + c) * ffn + i] = stored[(x * ffn + i) * h + c];
      down = { kind: 'f32', shape: [e, h, ffn], data };
    }
    weights.set(`${p}gate_proj.weight`, gate);
    weights.set(`${p}up_proj.weight`, up);
    weights.set(`${p}down_proj.weight`, { ...down, shape: [e, h, ffn], file: undefined });
    weights.set(`${p}gate_proj.bias`, gateBias);
    weights.set(`${p}up_proj.bias`, upBias);
    weights.set(`${p}down_proj.bias`, { kind: 'f32', shape: [e, h], data: f32Of(weights, `${p}down_proj_bias`) });
    for (const stored of ['gate_up_proj', 'gate_up_proj_bias', 'down_proj', 'down_proj_bias']) weights.release(`${p}${stored}`);
  }
}

/** Gate and up [e, ffn, h] of a float gate_up_proj stored [e, h, 2 * ffn] (outputs interleaved). */
function splitTransposedGateUp(gateUp: Float32Array, e: number, ffn: number, h: number): [WeightTensor, WeightTensor] {
  const gate = new Float32Array(e * ffn * h);
  const up = new Float32Array(e * ffn * h);
  for (let x = 0; x < e; x++) {
    for (let i = 0; i < ffn; i++) {
      for (let c = 0; c < h; c++) {
        gate[(x * ffn + i) * h + c] = gateUp[(x * h + c) * 2 * ffn + 2 * i];
        up[(x * ffn + i) * h + c] = gateUp[(x * h + c) * 2 * ffn + 2 * i + 1];
      }
    }
  }
  return [
    { kind: 'f32', shape: [e, ffn, h], data: gate },
    { kind: 'f32', shape: [e, ffn, h], data: up },
  ];
}

/**
 * The even and odd rows of a tensor stored with its rows interleaved, each of shape `shape`
 * (the row is the last dimension: floats, or Q8_0 blocks along it; a bias's row is one value).
 */
function evenOddRows(tensor: WeightTensor, shape: number[]): [WeightTensor, WeightTensor] {
  const pairs = shape[0] * shape[1]; // [experts, ffn, …]: one pair of stored rows each
  const split = <T extends Float32Array | Uint8Array>(data: T, make: (n: number) => T): [T, T] => {
    const width = data.length / (2 * pairs);
    const even = make(pairs * width);
    const odd = make(pairs * width);
    for (let r = 0; r < pairs; r++) {
      even.set(data.subarray(2 * r * width, (2 * r + 1) * width), r * width);
      odd.set(data.subarray((2 * r + 1) * width, (2 * r + 2) * width), r * width);
    }
    return [even, odd];
  };
  if (tensor.kind === 'f32') {
    const [even, odd] = split(tensor.data, (n) => new Float32Array(n));
    return [
      { kind: 'f32', shape, data: even },
      { kind: 'f32', shape, data: odd },
    ];
  }
  const [even, odd] = split(tensor.data, (n) => new Uint8Array(n));
  return [
    { kind: 'quantized', format: tensor.format, shape, data: even },
    { kind: 'quantized', format: tensor.format, shape, data: odd },
  ];
}

function f32Of(weights: WeightMap, name: string): Float32Array {
  const tensor: WeightTensor = weights.get(name);
  if (tensor.kind !== 'f32') throw new Error(`weight ${name} is stored quantized; float gpt-oss experts are read as floats`);
  return tensor.data;
}
