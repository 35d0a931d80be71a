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
  ['attn_norm.weight', 'input_layernorm.weight'],
  ['ffn_norm.weight', 'post_attention_layernorm.weight'],
];

/** Tensors llama.cpp writes that are not weights of the decoder (RoPE tables; rope_freqs is read as config). */
const NOT_WEIGHTS = /^(rope_freqs\.weight|blk\.\d+\.attn_rot_embd)$/;

/** The HF name of a GGUF tensor, null for non-weight tensors; throws for tensors we do not know. */
export function hfTensorName(ggufName: string): string | null {
  if (NOT_WEIGHTS.test(ggufName)) return null;
  const global = GLOBAL_NAMES.find(([gguf]) => gguf === ggufName);
  if (global) return global[1];
  const m = /^blk\.(\d+)\.(.+)$/.exec(ggufName);
  const block = m && BLOCK_NAMES.find(([gguf]) => gguf === m[2]);
  if (m && block) return `model.layers.${m[1]}.${block[1]}`;
  throw new Error(`GGUF tensor "${ggufName}" is not part of a llama/qwen2 decoder this server can run`);
}

/** The GGUF name of a canonical HF weight name (for the writer). */
export function ggufTensorName(hfName: string): string {
  const global = GLOBAL_NAMES.find(([, hf]) => hf === hfName);
  if (global) return global[0];
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hfName);
  const block = m && BLOCK_NAMES.find(([, hf]) => hf === m[2]);
  if (m && block) return `blk.${m[1]}.${block[0]}`;
  throw new Error(`weight "${hfName}" has no GGUF name`);
}
