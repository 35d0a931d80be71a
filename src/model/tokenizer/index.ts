export { createTokenizerFromHfFiles } from './hf-tokenizer';
export { createTokenizerFromGguf } from './gguf-tokenizer';
export { ggufEndOfGenerationIds, ggufVocabToTokenizerJson } from './gguf-vocab';
export { createBuiltinTokenizer, builtinTokenizerFiles, BUILTIN_SPECIAL_TOKENS } from './builtin-tokenizer';
