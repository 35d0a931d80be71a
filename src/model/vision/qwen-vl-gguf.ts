// Qwen2.5-VL's image side from a llama.cpp mmproj GGUF (projector `qwen2.5vl_merger`, as
// convert_hf_to_gguf.py writes it): clip.vision.* metadata for the shape, the window-attention
// pattern as n_wa_pattern (every n-th block attends over the whole image), the Conv3d split into
// one Conv2d per frame (v.patch_embd.weight, .weight.1) and qkv split into attn_q/k/v; both are
// joined back here into the tower's canonical weights.
import type { GgufMapping } from '../architectures/architecture';
import { readGgufFile, type GgufFile } from '../gguf/gguf-file';
import { loadGgufWeights } from '../gguf/gguf-weights';
import { concatF32, toF32 } from '../graph/weights';
import type { ModelArchConfig, ModelWeights, WeightTensor } from '../types';
import { imageProcessorConfigFromGguf } from './processor-config-gguf';
import { checkQwenVisionConfig, type QwenVisionConfig } from './qwen-vision-config';
import { checkedQwenVisionWeights, PATCH_EMBED } from './qwen-vision-weights';
import { qwenVisionModel, type QwenVlLoadOptions } from './qwen-vl-model';
import { qwenVlMrope, qwenVlPromptFormat } from './qwen-vl-prompt';
import { SettingsReader } from './settings-reader';
import type { VisionModel } from './vision-model';

export async function loadQwenVlFromGguf(mmprojPath: string, opts: QwenVlLoadOptions): Promise<VisionModel> {
  return qwenVlFromMmproj(await readGgufFile(mmprojPath), opts);
}

/** The same from an mmproj already read (its metadata; tensors are read when opts.loadWeights). */
export function qwenVlFromMmproj(file: GgufFile, opts: QwenVlLoadOptions): VisionModel {
  const mmprojPath = file.path;
  const config = qwenVisionConfigFromGguf(file);
  return qwenVisionModel({
    config,
    source: mmprojPath,
    processor: (kwargs) => imageProcessorConfigFromGguf(file.metadata, mmprojPath, pixelLimits(kwargs, mmprojPath)),
    mmProcessorKwargs: opts.mmProcessorKwargs ?? {},
    prompt: qwenVlPromptFormat(opts.tokenizer, undefined, mmprojPath),
    mrope: qwenVlMrope(opts.mropeSection, config.spatialMergeSize, mmprojPath),
    weights: opts.loadWeights ? readGgufVisionWeights(file, config) : null,
  });
}

/** mm_processor_kwargs as llama.cpp's --image-min/max-tokens: only the pixel limits apply. */
function pixelLimits(kwargs: Record<string, unknown>, source: string): { minPixels?: number; maxPixels?: number } {
  const unknown = Object.keys(kwargs).filter((key) => key !== 'min_pixels' && key !== 'max_pixels');
  if (unknown.length > 0) throw new Error(`${source}: mm_processor_kwargs ${unknown.join(', ')} not supported for a GGUF Qwen-VL model (min_pixels, max_pixels are)`);
  const limit = (key: string) => {
    const value = kwargs[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw new Error(`${source}: mm_processor_kwargs.${key} must be a positive integer`);
    return value;
  };
  const minPixels = limit('min_pixels');
  const maxPixels = limit('max_pixels');
  return { ...(minPixels !== undefined ? { minPixels } : {}), ...(maxPixels !== undefined ? { maxPixels } : {}) };
}

export function qwenVisionConfigFromGguf(file: GgufFile): QwenVisionConfig {
  const clip = new SettingsReader(file.metadata, `${file.path} (mmproj)`);
  const projector = clip.string('clip.vision.projector_type') ?? clip.string('clip.projector_type');
  if (projector !== 'qwen2.5vl_merger') clip.fail('clip.projector_type', `'${projector}' is not Qwen2.5-VL's tower ('qwen2.5vl_merger')`);
  if (!clip.bool('clip.use_silu', false)) clip.fail('clip.use_silu', "is not true: Qwen2.5-VL's MLP is SiLU-gated");
  const depth = clip.integer('clip.vision.block_count');
  // Required for qwen2.5vl_merger, as llama.cpp requires it; 0 turns window attention off.
  const rawPattern = clip.raw('clip.vision.n_wa_pattern');
  const pattern = typeof rawPattern === 'number' && Number.isInteger(rawPattern) && rawPattern >= 0 ? rawPattern : -1;
  if (pattern < 0) clip.fail('clip.vision.n_wa_pattern', `must be a non-negative integer, got ${JSON.stringify(rawPattern)}`);
  const config: QwenVisionConfig = {
    depth,
    hiddenSize: clip.integer('clip.vision.embedding_length'),
    numHeads: clip.integer('clip.vision.attention.head_count'),
    intermediateSize: clip.integer('clip.vision.feed_forward_length'),
    outHiddenSize: clip.integer('clip.vision.projection_dim'),
    patchSize: clip.integer('clip.vision.patch_size'),
    temporalPatchSize: 2,
    spatialMergeSize: clip.integer('clip.vision.spatial_merge_size', 2),
    windowSize: clip.integer('clip.vision.window_size', 112),
    // llama.cpp: block il attends fully when (il + 1) % n_wa_pattern == 0; 0 means every block does.
    fullAttentionBlocks: Array.from({ length: depth }, (_, b) => b).filter((b) => pattern === 0 || (b + 1) % pattern === 0),
    normEps: clip.number('clip.vision.attention.layer_norm_epsilon', 1e-6),
  };
  checkQwenVisionConfig(config, file.path);
  return config;
}

/** Canonical tensor names of the mmproj's (the q/k/v thirds and the per-frame patch embeddings are joined after). */
function canonicalName(name: string): string {
  const block = /^v\.blk\.(\d+)\.(\w+)\.(weight|bias)$/.exec(name);
  if (block) {
    const [, b, part, kind] = block;
    const parts: Record<string, string> = {
      ln1: 'norm1', ln2: 'norm2', attn_q: 'attn.q', attn_k: 'attn.k', attn_v: 'attn.v', attn_out: 'attn.proj',
      ffn_gate: 'mlp.gate_proj', ffn_up: 'mlp.up_proj', ffn_down: 'mlp.down_proj',
    };
    if (parts[part]) return `blocks.${b}.${parts[part]}.${kind}`;
  }
  const fixed: Record<string, string> = {
    'v.patch_embd.weight': 'patch_embed.frame0', 'v.patch_embd.weight.1': 'patch_embed.frame1', 'v.post_ln.weight': 'merger.ln_q.weight',
    'mm.0.weight': 'merger.mlp.0.weight', 'mm.0.bias': 'merger.mlp.0.bias', 'mm.2.weight': 'merger.mlp.2.weight', 'mm.2.bias': 'merger.mlp.2.bias',
  };
  if (fixed[name]) return fixed[name];
  throw new Error(`tensor ${name} is not part of a Qwen2.5-VL mmproj`);
}

function readGgufVisionWeights(file: GgufFile, config: QwenVisionConfig): ModelWeights {
  const names = new Map(file.tensors.map((t) => [canonicalName(t.name), t.name]));
  const mapping: GgufMapping<ModelArchConfig> = {
    architectures: [],
    config: () => {
      throw new Error('an mmproj file has no text model config');
    },
    tensorName: canonicalName,
    ggufName: (name) => names.get(name) ?? name,
    ropePermutedHeads: () => null,
  };
  const read = loadGgufWeights(file, { architecture: 'qwen2.5vl_merger' } as ModelArchConfig, mapping, new Set(names.keys()));
  const take = (name: string): WeightTensor => {
    if (!read.has(name)) throw new Error(`${file.path}: the mmproj lacks ${names.get(name) ?? name}`);
    return read.get(name);
  };
  const tensors: Array<[string, WeightTensor]> = [];
  for (const name of read.names()) {
    if (name.startsWith('patch_embed.') || /\.attn\.[qkv]\./.test(name)) continue;
    tensors.push([name, read.get(name)]);
  }
  tensors.push([PATCH_EMBED, joinFrames(take('patch_embed.frame0'), take('patch_embed.frame1'), config, file.path)]);
  for (let b = 0; b < config.depth; b++) {
    for (const kind of ['weight', 'bias'] as const) {
      const parts = ['q', 'k', 'v'].map((p) => take(`blocks.${b}.attn.${p}.${kind}`));
      const shape = kind === 'weight' ? [3 * config.hiddenSize, config.hiddenSize] : [3 * config.hiddenSize];
      tensors.push([`blocks.${b}.attn.qkv.${kind}`, { kind: 'f32', shape, data: concatF32(parts.map(toF32)) }]);
    }
  }
  return checkedQwenVisionWeights(config, tensors, file.path);
}

/** The two per-frame Conv2d kernels [hidden, 3, p, p] as the Conv3d's [hidden, (3, 2, p, p)] rows. */
function joinFrames(frame0: WeightTensor, frame1: WeightTensor, config: QwenVisionConfig, source: string): WeightTensor {
  const d = config.hiddenSize;
  const area = config.patchSize * config.patchSize;
  const want = [d, 3, config.patchSize, config.patchSize].join(',');
  if (frame0.shape.join(',') !== want || frame1.shape.join(',') !== want) throw new Error(`${source}: v.patch_embd.weight(.1) must be [${want}] each`);
  const frames = [toF32(frame0), toF32(frame1)];
  const out = new Float32Array(d * 3 * 2 * area);
  for (let o = 0; o < d; o++) {
    for (let c = 0; c < 3; c++) {
      for (let t = 0; t < 2; t++) out.set(frames[t].subarray((o * 3 + c) * area, (o * 3 + c + 1) * area), ((o * 3 + c) * 2 + t) * area);
    }
  }
  return { kind: 'f32', shape: [d, 6 * area], data: out };
}
