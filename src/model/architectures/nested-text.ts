// The text decoder of a vision-language checkpoint (Gemma3ForConditionalGeneration,
// LlavaForConditionalGeneration): its config under text_config, its tensors under
// `language_model.model.` / `language_model.lm_head.` (older transformers) or
// `model.language_model.` / `lm_head.` (newer), beside the vision tower and projector, which
// src/model/vision/ loads and a text descriptor skips.
import { isObject, type Json } from './hf-json';

const TEXT_PREFIXES: ReadonlyArray<readonly [stored: string, canonical: string]> = [
  ['language_model.model.', 'model.'],
  ['model.language_model.', 'model.'],
  ['language_model.lm_head.', 'lm_head.'],
];

/** Tensors of the vision tower and projector (and LLaVA-NeXT's image_newline), and RoPE buffers: not text weights. */
const NOT_TEXT_WEIGHTS = /^(model\.)?(vision_tower|multi_modal_projector)\.|^(model\.)?image_newline$|\.rotary_emb\.inv_freq$/;

/** The canonical text-decoder name of a stored tensor, or null for the vision side and buffers. */
export function nestedTextTensorName(stored: string): string | null {
  if (NOT_TEXT_WEIGHTS.test(stored)) return null;
  const prefix = TEXT_PREFIXES.find(([from]) => stored.startsWith(from));
  return prefix ? prefix[1] + stored.slice(prefix[0].length) : stored;
}

/** config.json's text_config over `defaults` (the text config class's), keeping the checkpoint's dtype. */
export function nestedTextConfig(json: Json, defaults: Json): Json {
  const text = isObject(json.text_config) ? json.text_config : {};
  return { ...defaults, torch_dtype: json.torch_dtype, ...text };
}
