// The canonical weight list of a llama/qwen2 decoder for a given config (HF names, [out, in] shapes).
import type { ModelArchConfig } from './types';

export interface WeightSpec {
  name: string;
  shape: number[];
  /** RMSNorm gains start at 1; everything else is a matrix or bias. */
  isNorm: boolean;
}

export function decoderWeightSpecs(config: ModelArchConfig): WeightSpec[] {
  const { hiddenSize: h, intermediateSize: ffn, numHeads, numKvHeads, headDim, vocabSize } = config;
  const q = numHeads * headDim;
  const kv = numKvHeads * headDim;
  const specs: WeightSpec[] = [{ name: 'model.embed_tokens.weight', shape: [vocabSize, h], isNorm: false }];
  for (let i = 0; i < config.numLayers; i++) {
    const p = `model.layers.${i}.`;
    specs.push(
      { name: `${p}input_layernorm.weight`, shape: [h], isNorm: true },
      { name: `${p}self_attn.q_proj.weight`, shape: [q, h], isNorm: false },
      { name: `${p}self_attn.k_proj.weight`, shape: [kv, h], isNorm: false },
      { name: `${p}self_attn.v_proj.weight`, shape: [kv, h], isNorm: false },
    );
    if (config.attentionBias) {
      specs.push(
        { name: `${p}self_attn.q_proj.bias`, shape: [q], isNorm: false },
        { name: `${p}self_attn.k_proj.bias`, shape: [kv], isNorm: false },
        { name: `${p}self_attn.v_proj.bias`, shape: [kv], isNorm: false },
      );
    }
    specs.push(
      { name: `${p}self_attn.o_proj.weight`, shape: [h, q], isNorm: false },
      { name: `${p}post_attention_layernorm.weight`, shape: [h], isNorm: true },
      { name: `${p}mlp.gate_proj.weight`, shape: [ffn, h], isNorm: false },
      { name: `${p}mlp.up_proj.weight`, shape: [ffn, h], isNorm: false },
      { name: `${p}mlp.down_proj.weight`, shape: [h, ffn], isNorm: false },
    );
  }
  specs.push({ name: 'model.norm.weight', shape: [h], isNorm: true });
  if (!config.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [vocabSize, h], isNorm: false });
  return specs;
}

/** Throws naming the first weight that is missing or has the wrong shape. */
export function checkDecoderWeights(
  config: ModelArchConfig,
  shapeOf: (name: string) => number[] | undefined,
  source: string,
): void {
  for (const spec of decoderWeightSpecs(config)) {
    const shape = shapeOf(spec.name);
    if (!shape) throw new Error(`${source}: missing weight ${spec.name}`);
    if (shape.join(',') !== spec.shape.join(',')) {
      throw new Error(`${source}: weight ${spec.name} has shape [${shape.join(',')}], the config implies [${spec.shape.join(',')}]`);
    }
  }
}
