// End-to-end check of the loader's conventions (names, [out, in] layout, un-permuted Q/K rows for
// rotate-half RoPE): an HF-convention forward pass over the loaded stories260K weights must decode
// greedily exactly what llama.cpp decodes from the same file.
import { loadModel } from '../../../src/model/load-model';
import { loadOptions, sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { referenceForward } from '../../helpers/reference-forward';

/**
 * llama.cpp (b-series via @fugood/llama.node 1.7.15), stories260K.gguf, prompt "Once upon a time",
 * greedy (top_k 1), 40 tokens. The same text came from stories260K-Q8_0.gguf and from files the
 * GGUF writer produced from the loaded weights (F32, F16, Q8_0).
 */
const LLAMA_CPP_CONTINUATION = ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball.';

const argmax = (v: Float32Array) => v.reduce((best, x, i) => (x > v[best] ? i : best), 0);

describe('stories260K: loader conventions match llama.cpp', () => {
  for (const file of ['stories260K.gguf', 'stories260K-Q8_0.gguf']) {
    const path = sharedModel(file);
    needs(path).it(`${file} greedy decoding with rotate-half RoPE reproduces llama.cpp`, async () => {
      const model = await loadModel(loadOptions(path));
      const tokenizer = model.tokenizer!;
      const tokens = tokenizer.encode('Once upon a time');
      const promptLength = tokens.length;
      let text = '';
      while (!text.startsWith(LLAMA_CPP_CONTINUATION) && tokens.length < promptLength + 40) {
        const logits = referenceForward(model.config, model.weights!, tokens);
        tokens.push(argmax(logits[logits.length - 1]));
        text = tokenizer.decode(tokens.slice(promptLength));
      }
      expect(text.slice(0, LLAMA_CPP_CONTINUATION.length)).toBe(LLAMA_CPP_CONTINUATION);
    });
  }
});
