// How a Qwen2-VL / Qwen2.5-VL image enters the prompt: the chat template renders
// <|vision_start|><|image_pad|><|vision_end|>, and the serving side repeats <|image_pad|> once per
// merged patch (the template already wrote the start and end tokens, so no prefix or suffix).
import type { Tokenizer } from '../types';
import { specialTokenId } from './prompt-tokens';
import type { ImagePromptFormat, MropeSpec } from './vision-model';

export const QWEN_IMAGE_PAD = '<|image_pad|>';
export const QWEN_IMAGE_PLACEHOLDER = `<|vision_start|>${QWEN_IMAGE_PAD}<|vision_end|>`;

/** The prompt format, with <|image_pad|>'s id as the tokenizer encodes it (a config's image_token_id must agree). */
export function qwenVlPromptFormat(tokenizer: Tokenizer, configuredId: number | undefined, source: string): ImagePromptFormat {
  const id = specialTokenId(tokenizer, QWEN_IMAGE_PAD, source, configuredId);
  return { placeholderText: QWEN_IMAGE_PLACEHOLDER, placeholderTokenId: id, imageTokenId: id, prefix: [], suffix: [] };
}

export function qwenVlMrope(section: readonly [number, number, number] | undefined, spatialMergeSize: number, source: string): MropeSpec {
  if (!section) throw new Error(`${source}: a Qwen-VL language model needs its M-RoPE section (rope_scaling.mrope_section, GGUF rope.dimension_sections)`);
  return { section, spatialMergeSize };
}
