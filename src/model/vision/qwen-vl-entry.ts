// Qwen2.5-VL's entry for the per-family vision registry (load-vision.ts): which checkpoints it
// takes and how it builds their VisionModel. The M-RoPE section belongs to the language model:
// a Hugging Face config.json states it (rope_scaling.mrope_section), an mmproj does not, so the
// caller passes the text GGUF's (DecoderArchConfig.mropeSection).
import { requireTokenizer } from './prompt-tokens';
import { qwenVlFromMmproj } from './qwen-vl-gguf';
import { loadQwenVlFromHf } from './qwen-vl-model';
import type { VisionLoader } from './vision-loader';
import type { VisionModel } from './vision-model';

export const qwenVlVision: VisionLoader = {
  hfModelTypes: ['qwen2_5_vl'],
  ggufProjectors: ['qwen2.5vl_merger'],
  fromHf(ctx): VisionModel {
    const text = (typeof ctx.configJson.text_config === 'object' && ctx.configJson.text_config !== null ? ctx.configJson.text_config : ctx.configJson) as Record<string, unknown>;
    const scaling = (text.rope_scaling ?? ctx.configJson.rope_scaling) as { mrope_section?: [number, number, number] } | null | undefined;
    return loadQwenVlFromHf(ctx.dir, { ...ctx, tokenizer: requireTokenizer(ctx.tokenizer, ctx.dir), mropeSection: ctx.mropeSection ?? scaling?.mrope_section });
  },
  fromGguf(ctx): VisionModel {
    return qwenVlFromMmproj(ctx.mmproj, { ...ctx, tokenizer: requireTokenizer(ctx.tokenizer, ctx.mmproj.path), mropeSection: ctx.mropeSection });
  },
};
