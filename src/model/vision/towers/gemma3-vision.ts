// Gemma 3's entry in the vision registry: the SigLIP tower and its prompt format, vLLM's
// Gemma3 processor's: each <start_of_image> the template leaves becomes
// "\n\n" <start_of_image> <image_soft_token> x N <end_of_image> "\n\n".
import type { Tokenizer } from '../../types';
import { specialTokenId } from '../prompt-tokens';
import type { ImagePromptFormat } from '../vision-model';
import { gemma3GgufVitConfig, gemma3HfVitConfig } from './gemma3-tower';
import { vitVisionLoader } from './vit-family';
import { PROJECTOR } from './vit-weights';

const BOI = '<start_of_image>';

function gemma3Prompt(tokenizer: Tokenizer, source: string, json: Record<string, unknown> = {}): ImagePromptFormat {
  const boi = specialTokenId(tokenizer, BOI, source, json.boi_token_index);
  const newlines = tokenizer.encode('\n\n', { addSpecialTokens: false });
  return {
    placeholderText: BOI,
    placeholderTokenId: boi,
    imageTokenId: specialTokenId(tokenizer, '<image_soft_token>', source, json.image_token_index),
    prefix: [...newlines, boi],
    suffix: [specialTokenId(tokenizer, '<end_of_image>', source, json.eoi_token_index), ...newlines],
  };
}

export const gemma3Vision = vitVisionLoader({
  family: 'gemma3',
  hfModelTypes: ['gemma3'],
  ggufProjectors: ['gemma3'],
  hfTower: gemma3HfVitConfig,
  ggufTower: (file) => gemma3GgufVitConfig(file.metadata, file.path),
  prompt: gemma3Prompt,
  // transformers' token_type_ids mask (full and sliding layers) and llama.cpp's non-causal image
  // decode: an image's soft tokens see each other both ways.
  bidirectionalImages: true,
  // Transformers stores Gemma's norm gain w and multiplies by 1 + w; canonical is the factor.
  hfAdjust: (name) => (name === `${PROJECTOR}mm_soft_emb_norm.weight` ? (values) => values.forEach((v, i) => (values[i] = v + 1)) : null),
});
