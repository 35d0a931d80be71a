// GGUF tensor names (llama.cpp's gguf-py constants) <-> canonical Hugging Face names.

const GLOBAL_NAMES: ReadonlyArray<readonly [gguf: string, hf: string]> = [
  ['token_embd.weight', 'model.embed_tokens.weight'],
  ['output_norm.weight', 'model.norm.weight'],
  ['output.weight', 'lm_head.weight'],
];

const BLOCK_NAMES: ReadonlyArray<readonly [gguf: string, hf: string]> = [
  ['attn_q.weight', 'self_attn.q_proj.weight'],
  ['attn_k.weight', 'self_attn.k_proj.weight'],
  ['attn_v.weight', 'self_attn.v_proj.weight'],
  ['attn_q.bias', 'self_attn.q_proj.bias'],
  ['attn_k.bias', 'self_attn.k_proj.bias'],
  ['attn_v.bias', 'self_attn.v_proj.bias'],
  ['attn_q_norm.weight', 'self_attn.q_norm.weight'],
  ['attn_k_norm.weight', 'self_attn.k_norm.weight'],
  ['attn_output.weight', 'self_attn.o_proj.weight'],
  ['ffn_gate.weight', 'mlp.gate_proj.weight'],
  ['ffn_up.weight', 'mlp.up_proj.weight'],
  ['ffn_down.weight', 'mlp.down_proj.weight'],
  ['ffn_gate_inp.weight', 'mlp.gate.weight'],
  ['ffn_gate_exps.weight', 'mlp.experts.gate_proj.weight'],
  ['ffn_up_exps.weight', 'mlp.experts.up_proj.weight'],
  ['ffn_down_exps.weight', 'mlp.experts.down_proj.weight'],
  ['attn_norm.weight', 'input_layernorm.weight'],
  ['ffn_norm.weight', 'post_attention_layernorm.weight'],
];

/** Tensors llama.cpp writes that are not weights of the decoder (RoPE tables; rope_freqs is read as config). */
const NOT_WEIGHTS = /^(rope_freqs\.weight|blk\.\d+\.attn_rot_embd)$/;

type NameTable = ReadonlyArray<readonly [gguf: string, canonical: string]>;

/**
 * A family's GGUF <-> canonical name lookups from its tables: whole-model names, and block names
 * under `blk.N.` / `model.layers.N.`. `family` names it in errors ("… is not part of a <family>").
 */
export function ggufNameMapping(globalNames: NameTable, blockNames: NameTable, family: string): { canonical(ggufName: string): string; gguf(canonical: string): string } {
  return {
    canonical(ggufName) {
      const global = globalNames.find(([gguf]) => gguf === ggufName);
      if (global) return global[1];
      const m = /^blk\.(\d+)\.(.+)$/.exec(ggufName);
      const block = m && blockNames.find(([gguf]) => gguf === m[2]);
      if (m && block) return `model.layers.${m[1]}.${block[1]}`;
      throw new Error(`GGUF tensor "${ggufName}" is not part of a ${family} this server can run`);
    },
    gguf(canonical) {
      const global = globalNames.find(([, name]) => name === canonical);
      if (global) return global[0];
      const m = /^model\.layers\.(\d+)\.(.+)$/.exec(canonical);
      const block = m && blockNames.find(([, name]) => name === m[2]);
      if (m && block) return `blk.${m[1]}.${block[0]}`;
      throw new Error(`weight "${canonical}" has no GGUF name`);
    },
  };
}

/** The two name maps of a llama-style family (tensors llama.cpp writes that are not weights map to null). */
export interface TensorNameMaps {
  /** The HF name of a GGUF tensor, null for non-weight tensors; throws for tensors we do not know. */
  readonly hfTensorName: (ggufName: string) => string | null;
  /** The GGUF name of a canonical HF weight name (for the writer). */
  readonly ggufTensorName: (hfName: string) => string;
}

/**
 * A family's name maps: the llama table with `blocks` (llama.cpp's names for this family) replacing
 * the entries of the same GGUF or HF name (gemma's ffn_norm is pre_feedforward_layernorm).
 */
export function blockNameMaps(blocks: NameTable): TensorNameMaps {
  const table = [...BLOCK_NAMES.filter(([gguf, hf]) => !blocks.some(([g, h]) => g === gguf || h === hf)), ...blocks];
  const names = ggufNameMapping(GLOBAL_NAMES, table, 'decoder');
  return {
    hfTensorName: (ggufName) => (NOT_WEIGHTS.test(ggufName) ? null : names.canonical(ggufName)),
    ggufTensorName: (hfName) => names.gguf(hfName),
  };
}

const LLAMA_NAMES = blockNameMaps([]);

/** The HF name of a llama-style GGUF tensor, null for non-weight tensors; throws for tensors we do not know. */
export const hfTensorName = LLAMA_NAMES.hfTensorName;

/** The GGUF name of a canonical HF weight name of a llama-style decoder (for the writer). */
export const ggufTensorName = LLAMA_NAMES.ggufTensorName;
