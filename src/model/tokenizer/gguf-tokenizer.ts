import type { Tokenizer } from '../types';
import { ggufVocabToTokenizerJson } from './gguf-vocab';
import { createTokenizerFromHfFiles } from './hf-tokenizer';

/**
 * Tokenizer of a GGUF file's vocabulary (`metadata` as read by @huggingface/gguf): converted to
 * tokenizer.json form and run by the same code as Hugging Face directories, as vLLM does through
 * transformers' GGUF loader.
 */
export function createTokenizerFromGguf(metadata: Record<string, unknown>): Tokenizer {
  const { tokenizerJson, tokenizerConfig } = ggufVocabToTokenizerJson(metadata);
  return createTokenizerFromHfFiles(tokenizerJson, tokenizerConfig);
}
