// The language model of a Qwen2-VL / Qwen2.5-VL checkpoint, read as the qwen2 decoder it is:
// config.json's text fields (at the top level, or under text_config in newer transformers), the
// text weights under `model.*` / `lm_head` (or `model.language_model.*`), the tower's `visual.*`
// left to the vision loader; a llama.cpp `qwen2vl` GGUF's rope.dimension_sections as the M-RoPE
// section.
import type { GgufFile } from '../gguf/gguf-file';
import type { DecoderArchConfig } from '../types';
import { isObject, type Json } from './hf-json';

export const QWEN_VL_MODEL_TYPES = ['qwen2_vl', 'qwen2_5_vl'] as const;

/** The tower's tensors (read by vision/qwen-vl-model.ts, not the decoder). */
const VISION_TENSORS = /^(model\.)?visual\./;

/** config.json as the text decoder reads it: text_config's fields over the top level's. */
export function qwenVlTextJson(json: Json): Json {
  if (!QWEN_VL_MODEL_TYPES.includes(json.model_type as never)) return json;
  return isObject(json.text_config) ? { ...json, ...json.text_config } : json;
}

/** The canonical text name of a stored tensor; null for the tower's. */
export function qwenVlTextTensorName(stored: string): string | null {
  if (VISION_TENSORS.test(stored)) return null;
  if (stored.startsWith('model.language_model.')) return `model.${stored.slice('model.language_model.'.length)}`;
  return stored;
}

/** llama.cpp's qwen2vl text GGUF: [t, h, w, 0] rotary half-dims in rope.dimension_sections. */
export function qwenVlGgufMrope(file: GgufFile): Pick<DecoderArchConfig, 'mropeSection'> {
  const arch = file.metadata['general.architecture'];
  if (arch !== 'qwen2vl') return {};
  const sections = file.metadata['qwen2vl.rope.dimension_sections'];
  if (!Array.isArray(sections) || sections.length !== 4 || !sections.every((n) => Number.isInteger(Number(n)) && Number(n) >= 0) || Number(sections[3]) !== 0) {
    throw new Error(`${file.path}: qwen2vl.rope.dimension_sections must be four non-negative integers ending in 0, got ${JSON.stringify(sections)}`);
  }
  return { mropeSection: [Number(sections[0]), Number(sections[1]), Number(sections[2])] };
}
