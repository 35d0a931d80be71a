// What the one-graph decoders (decoder-graph.ts: --attention graph, and decoders served for
// pooling) do not compute. A config that needs one of these is refused when its graph is built,
// naming the piece, rather than served as something else; the segmented runner has them all.
import type { DecoderArchConfig } from '../types';
import { hasLayerRope, slidingWindowOf } from './layer-options';

/** The features of `config` the in-graph attention lacks for sequences of up to `maxPositions` (empty: none). */
export function inGraphLacks(config: DecoderArchConfig, maxPositions: number): string[] {
  const lacks: string[] = [];
  // A window at least as long as every sequence never drops a position: full attention is exact.
  const windows = Array.from({ length: config.numLayers }, (_, l) => slidingWindowOf(config, l)).filter((w) => w > 0 && w < maxPositions);
  if (windows.length) lacks.push(`a sliding window (${Math.min(...windows)} positions, shorter than the ${maxPositions} served)`);
  if (config.attentionScale !== undefined && config.attentionScale !== 1 / Math.sqrt(config.headDim)) lacks.push('an attention scale other than 1/sqrt(head_dim)');
  if (hasLayerRope(config)) lacks.push('per-layer RoPE settings');
  return lacks;
}

/** Throws the start-up error when the in-graph attention cannot compute `config` (`what`: the graph, for the message). */
export function refuseInGraph(config: DecoderArchConfig, maxPositions: number, what: string): void {
  const lacks = inGraphLacks(config, maxPositions);
  if (lacks.length === 0) return;
  throw new Error(
    `${config.architecture}: ${what} (attention inside one graph) lacks ${lacks.join(', ')}; ` +
      'serve it with the native attention addon (the default segmented runner)' +
      (lacks.length === 1 && lacks[0].startsWith('a sliding window') ? ', or with --max-model-len at most the window' : ''),
  );
}
