// Qwen2.5-VL's entry for the per-family vision registry (load-vision.ts): which checkpoints it
// takes and how it builds their VisionModel. The M-RoPE section belongs to the language model:
// a Hugging Face config.json states it (rope_scaling.mrope_section), an mmproj does not, so the
// caller passes the text GGUF's (DecoderArchConfig.mropeSection).
import type { GgufFile } from '../gguf/gguf-file';
import type { Tokenizer } from '../types';
import { qwenVlFromMmproj } from './qwen-vl-gguf';
import { loadQwenVlFromHf } from './qwen-vl-model';
import type { VisionModel } from './vision-model';

interface QwenVlContext {
  tokenizer: Tokenizer | null;
  loadWeights: boolean;
  mmProcessorKwargs: Record<string, unknown>;
  /** The text model's M-RoPE section (required for GGUF, where the mmproj cannot say it). */
  mropeSection?: readonly [number, number, number];
}

export const qwenVlVision = {
  hfModelTypes: ['qwen2_5_vl'] as readonly string[],
  ggufProjectors: ['qwen2.5vl_merger'] as readonly string[],
  fromHf(ctx: QwenVlContext & { dir: string; configJson: Record<string, unknown> }): VisionModel {
    const text = (typeof ctx.configJson.text_config === 'object' && ctx.configJson.text_config !== null ? ctx.configJson.text_config : ctx.configJson) as Record<string, unknown>;
    const scaling = (text.rope_scaling ?? ctx.configJson.rope_scaling) as { mrope_section?: [number, number, number] } | null | undefined;
    return loadQwenVlFromHf(ctx.dir, { ...ctx, tokenizer: needTokenizer(ctx.tokenizer, ctx.dir), mropeSection: ctx.mropeSection ?? scaling?.mrope_section });
  },
  fromGguf(ctx: QwenVlContext & { mmproj: GgufFile }): VisionModel {
    return qwenVlFromMmproj(ctx.mmproj, { ...ctx, tokenizer: needTokenizer(ctx.tokenizer, ctx.mmproj.path), mropeSection: ctx.mropeSection });
  },
};

function needTokenizer(tokenizer: Tokenizer | null, source: string): Tokenizer {
  if (!tokenizer) throw new Error(`${source}: a Qwen-VL model needs its tokenizer to find <|image_pad|> (start without --skip-tokenizer-init)`);
  return tokenizer;
}
