// --disable-sliding-window, as vLLM reads it: every layer of a sliding-window model attends over
// the whole context, and the context is capped at the window, the only stretch where full
// attention computes what the model was trained to (its sliding layers never saw further back).
import type { DecoderArchConfig, ModelArchConfig } from './types';

/** The config without its window, and the context cap that comes with it (null: no window, nothing changes). */
export function withoutSlidingWindow(config: ModelArchConfig): { config: ModelArchConfig; contextCap: number | null } {
  const { slidingWindow, layerTypes: _layerTypes, ...rest } = config as DecoderArchConfig;
  if (!slidingWindow) return { config, contextCap: null };
  return { config: rest, contextCap: slidingWindow };
}
