// Which layers of a Qwen2/Qwen3 config slide when it has no layer_types: HF's Qwen2Config and
// Qwen3Config make layers from max_window_layers (default 28) on sliding.
import type { Json } from './hf-json';

export function qwenFirstWindowedLayer(json: Json): number {
  return typeof json.max_window_layers === 'number' ? json.max_window_layers : 28;
}
