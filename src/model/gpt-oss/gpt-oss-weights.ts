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
 * and [experts, out, in] as MXFP4 (down_proj likewise).
 */
export function unfuseGptOssExperts(config: GptOssArchConfig, weights: WeightMap): void {
  if (config.expertStorage === 'split') return;
  const { numExperts: e, expertIntermediateSize: ffn, hiddenSize: h } = config;
  const transposed = config.expertStorage === 'fused';
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}.mlp.experts.`;
    const gateUp = f32Of(weights, `${p}gate_up_proj`);
    const gateUpBias = f32Of(weights, `${p}gate_up_proj_bias`);
    const gate = new Float32Array(e * ffn * h);
    const up = new Float32Array(e * ffn * h);
    const gateBias = new Float32Array(e * ffn);
    const upBias = new Float32Array(e * ffn);
    // Element (expert x, output o, input c) of a stored [e, 2 * ffn, h] or [e, h, 2 * ffn] tensor.
    const at = (x: number, o: number, c: number) => (transposed ? (x * h + c) * 2 * ffn + o : (x * 2 * ffn + o) * h + c);
    for (let x = 0; x < e; x++) {
      for (let i = 0; i < ffn; i++) {
        gateBias[x * ffn + i] = gateUpBias[x * 2 * ffn + 2 * i];
        upBias[x * ffn + i] = gateUpBias[x * 2 * ffn + 2 * i + 1];
        for (let c = 0; c < h; c++) {
          gate[(x * ffn + i) * h + c] = gateUp[at(x, 2 * i, c)];
          up[(x * ffn + i) * h + c] = gateUp[at(x, 2 * i + 1, c)];
        }
      }
    }
    const storedDown = f32Of(weights, `${p}down_proj`);
    let down = storedDown;
    if (transposed) {
      down = new Float32Array(e * h * ffn);
      for (let x = 0; x < e; x++) for (let i = 0; i < ffn; i++) for (let c = 0; c < h; c++) down[(x * h + c) * ffn + i] = storedDown[(x * ffn + i) * h + c];
    }
    const set = (name: string, shape: number[], data: Float32Array) => weights.set(`${p}${name}`, { kind: 'f32', shape, data });
    set('gate_proj.weight', [e, ffn, h], gate);
    set('up_proj.weight', [e, ffn, h], up);
    set('down_proj.weight', [e, h, ffn], down);
    set('gate_proj.bias', [e, ffn], gateBias);
    set('up_proj.bias', [e, ffn], upBias);
    set('down_proj.bias', [e, h], f32Of(weights, `${p}down_proj_bias`));
    for (const stored of ['gate_up_proj', 'gate_up_proj_bias', 'down_proj', 'down_proj_bias']) weights.release(`${p}${stored}`);
  }
}

function f32Of(weights: WeightMap, name: string): Float32Array {
  const tensor: WeightTensor = weights.get(name);
  if (tensor.kind !== 'f32') throw new Error(`weight ${name} is stored quantized; gpt-oss experts are read as floats or MXFP4 blocks`);
  return tensor.data;
}
