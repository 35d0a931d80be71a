// A copy of a GGUF model whose last vocabulary entries are replaced by whole texts (user-defined
// tokens, as Qwen's <tool_call> is one). With `logit_bias` {id: 100} a request makes the model
// write exactly that text once per generated token: how e2e tests get tool-call and thinking
// markup out of a model too small to write it on its own.

import { loadGgufModel } from '../../src/model/gguf/load-gguf';
import { ggufTokenizerMetadata, writeModelGguf } from '../../src/model/gguf/write-model';
import { gv } from '../../src/model/gguf/writer';
import type { DecoderArchConfig } from '../../src/model/types';

const USER_DEFINED = 4;
const CONTROL = 3;

/** Writes the copy to `path`; returns each text's token id. `special` makes them control tokens (as harmony's markers are). */
export async function writeForcedTextModel(source: string, path: string, texts: string[], special = false): Promise<number[]> {
  const model = await loadGgufModel(source, { loadWeights: true });
  const metadata = ggufTokenizerMetadata(model.file);
  const tokens = [...(metadata['tokenizer.ggml.tokens'].value as string[])];
  const types = [...(metadata['tokenizer.ggml.token_type'].value as number[])];
  const ids = texts.map((_, i) => tokens.length - 1 - i);
  ids.forEach((id, i) => {
    tokens[id] = texts[i];
    types[id] = special ? CONTROL : USER_DEFINED;
  });
  metadata['tokenizer.ggml.tokens'] = gv.strings(tokens);
  metadata['tokenizer.ggml.token_type'] = gv.i32s(types);
  const weights = model.weights!;
  const tensors = weights.names().map((name) => {
    const tensor = weights.get(name);
    if (tensor.kind !== 'f32') throw new Error(`${name}: only F32 models can be copied`);
    return { name, shape: tensor.shape, values: () => tensor.data };
  });
  // A GGUF source with logits output is a decoder.
  writeModelGguf(path, model.config as DecoderArchConfig, tensors, metadata, 'f32', 'forced-text');
  return ids;
}
